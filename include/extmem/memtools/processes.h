// Which live processes a tool acts on: by name (comm), by command line, by pid.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/regex.h"
#include "extmem/memtools/syntax.h"
#include "extmem/os/proc_maps.h"

namespace extmem::memtools {

/// The longest /proc/PID/comm the kernel keeps (TASK_COMM_LEN - 1).
inline constexpr std::size_t kMaxComm = 15;

/// Criteria a process must all meet. At least one should be set; an empty
/// filter matches every process.
struct ProcessFilter {
  std::optional<std::string> comm;  ///< exact /proc/PID/comm; a longer name is compared on its first kMaxComm bytes
  std::optional<Regex> cmdline;     ///< found in the command line, arguments joined by single spaces
  std::vector<pid_t> pids;          ///< one of these pids (empty: any)
};

/// A process as seen in /proc.
struct ProcessInfo {
  pid_t pid = 0;
  std::string comm;     ///< /proc/PID/comm without the newline
  std::string cmdline;  ///< /proc/PID/cmdline, NULs turned into spaces, trailing ones dropped
  char state = '?';     ///< from /proc/PID/stat: 'R', 'S', 'D', 'T', 'Z' (zombie: exited, no memory left), ...
};

/// Parses a process id: a decimal number from 1 to the largest pid_t.
/// Errors: invalid_argument, step "parse pid"; `syntax` as for parse_number.
Result<pid_t> parse_pid(std::string_view text, SyntaxError* syntax = nullptr);

/// Reads comm, cmdline and state of `pid`. Errors: os_error("open /proc/PID/comm")
/// (ENOENT: no such process).
Result<ProcessInfo> read_process(pid_t pid);

/// True while `pid` exists and is not a zombie, i.e. still has its memory.
bool process_running(pid_t pid);

/// The mappings of a live `pid` (os::read_maps). A zombie has none; that is an
/// error here, not an empty list, so a tool never reports "0 mappings" or "not
/// mapped" for a process that has exited. Errors: those of os::read_maps, and
/// os_error("read /proc/PID/maps", ESRCH) for a zombie.
Result<std::vector<os::MapEntry>> read_live_maps(pid_t pid);

/// True for errors meaning the process does not exist or has ended: an OS
/// error whose code is ENOENT (its /proc entry is gone) or ESRCH.
bool process_gone(const Error& error);

/// True when `process` meets every criterion of `filter`.
bool matches(const ProcessFilter& filter, const ProcessInfo& process);

/// Every live process (thread-group leader) that matches, sorted by pid,
/// leaving out the calling process itself (its own command line would match a
/// --cmdline pattern) and zombies (they have exited and have no memory).
/// Processes that end while being read are skipped.
/// Errors: os_error("open /proc").
Result<std::vector<ProcessInfo>> find_processes(const ProcessFilter& filter);

}  // namespace extmem::memtools
