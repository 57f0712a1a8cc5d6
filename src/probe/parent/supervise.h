// Runs one route as two child processes and turns what happens into a RowResult.
#pragma once

#include <string>

#include "probe/routes.h"
#include "probe/parent/row_result.h"

namespace extmem::probe {

struct SuperviseParams {
  std::string exe;              ///< binary to re-execute
  unsigned device_index = 0;
  Layout layout;
  double timeout_s = 60;        ///< for the whole route, seconds
  double soak_s = 0;            ///< passed to the halves; the route may take this much longer
  bool measure = false;         ///< --measure to the halves (the measuring run, never the verdict run)
  unsigned measure_repeats = 5;
  int memory_type = -1;         ///< --memory-type-index to the halves; -1 = auto
};

/// Starts the server half and the client half (fd 3: the socket between
/// them; fd 4: each one's report socket to us), collects step and report
/// messages until both close their report sockets or the time runs out, and
/// reaps both. Timeouts, signals, non-zero exits without a report and
/// malformed messages become FAIL with the half and its last step.
/// Errors: only when a child cannot be started at all (os_error("posix_spawn")).
Result<RowResult> supervise(const RouteDef& route, const SuperviseParams& params);

}  // namespace extmem::probe
