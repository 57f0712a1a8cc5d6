// The fields of /proc/PID/task/TID/status that `extmem threads` uses: who the
// thread is, its state, who traces it, how often it has been switched out.
// The file is readable by anyone (unlike .../syscall), so tracer hygiene works
// machine-wide without privileges.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/core/error.h"

namespace extmem::memtools {

/// The parsed lines of a status file; absent lines keep their defaults.
struct TaskStatus {
  std::string name;         ///< "Name:" (the comm, at most 15 bytes; the kernel escapes control bytes)
  char state = '?';         ///< "State:" letter: R S D T t Z X I P ...
  pid_t tgid = 0;           ///< "Tgid:" the process (thread group) id
  pid_t pid = 0;            ///< "Pid:" the thread id
  pid_t ppid = 0;           ///< "PPid:"
  pid_t tracer_pid = 0;     ///< "TracerPid:" the thread (tid) tracing this one, 0 when untraced
  uid_t uid = 0;            ///< "Uid:" the real uid (first of four)
  std::uint64_t voluntary_switches = 0;     ///< "voluntary_ctxt_switches:"
  std::uint64_t nonvoluntary_switches = 0;  ///< "nonvoluntary_ctxt_switches:"
};

/// Parses the text of a /proc status file. Unknown lines are skipped; a known
/// line with a malformed value, or no "Pid:" line, is an error
/// (invalid_argument, step "parse status", the detail names the line).
Result<TaskStatus> parse_task_status(std::string_view text);

/// One word for a state letter: "running", "sleeping", "disk-sleep",
/// "stopped", "tracing-stop", "zombie", "dead", "idle", "parked", or "?".
std::string_view describe_state(char state);

}  // namespace extmem::memtools
