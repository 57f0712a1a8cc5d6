// The parent's record of one row.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/verdict.h"

namespace extmem::probe {

struct RowResult {
  std::string row;
  Verdict verdict;
  std::vector<Leg> legs;
  std::vector<std::string> detail;
  std::string server_step, client_step;  ///< last step each half reported
  double seconds = 0;                     ///< wall time of the route
  std::optional<SoakCount> soak;          ///< --soak counts, when the route soaked
  nlohmann::json measure;                 ///< --measure figures (measure_row.h); null when not measured
  /// Warm workers only: what each half left in its worker, {"server": …, "client": …}
  /// (worker/worker_main.h HygieneSnapshot::compare_to); null with --isolate=route.
  nlohmann::json worker_hygiene;
};

/// "RESULT <row> <STATUS> <trace> [why: ...] [detail: ...]".
std::string result_line(const RowResult& r);

}  // namespace extmem::probe
