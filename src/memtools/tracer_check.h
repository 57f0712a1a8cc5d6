// Private to threads/tracers: what is wrong, if anything, with a traced
// thread and its tracer, and how to recover, one line per step.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "extmem/memtools/task_status.h"

namespace extmem::memtools::detail {

struct TracerFinding {
  TaskStatus tracee;             ///< the traced thread's status
  pid_t tracer = 0;              ///< TracerPid: a thread id
  bool tracer_gone = false;      ///< no /proc entry for the tracer, or a zombie/dead one
  TaskStatus tracer_status;      ///< when not gone
  std::string tracer_wchan;      ///< "" when running, unreadable or not sleeping in a named function
  std::vector<pid_t> cycle;      ///< the tracer chain back to the tracee when tracing is mutual
  std::vector<std::string> flags;  ///< conditions that leave the tracee stuck (empty: only traced)
  std::vector<std::string> steps;  ///< recovery, one line each, destructive ones say so
};

/// Examines `tracee` (whose tracer_pid is not 0): reads the tracer's status
/// and wchan, follows the tracer chain (at most 16 steps) to find mutual
/// tracing, and fills flags and steps.
TracerFinding examine_tracee(const TaskStatus& tracee);

/// The wchan of thread `tid` ("" when 0, unreadable or hidden).
std::string read_wchan(pid_t tid);

}  // namespace extmem::memtools::detail
