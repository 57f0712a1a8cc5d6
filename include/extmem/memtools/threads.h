// `extmem threads`: where each thread of a process sits, read from
// /proc/PID/task/TID/{syscall,wchan,status} without ptrace, so nothing is
// stopped or attached; with a sampling window, a histogram per thread of where
// it was. And tracer hygiene: who traces whom, and which of those states leave
// a process stuck. docs/memtools.md shows the output.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

#include "extmem/memtools/ioctl_names.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/syscall.h"

namespace extmem::memtools {

/// Exit code when a tracer condition is flagged (tracee stopped by its tracer,
/// tracer blocked, stopped or gone, mutual tracing; with expect_none, any tracer).
inline constexpr int kExitTracerFlagged = 8;

/// The system call of `s` as one line: "ioctl(3</dev/null>, 0xc0406400, …)"
/// with every argument (fd arguments with their path from `fd_path`, which
/// returns "" when unknown), then what is decoded: an ioctl request through
/// `table`, a futex operation. "running" and "in the kernel, not in a system
/// call" for the other kinds.
std::string describe_syscall(const SyscallSample& s, const IoctlTable& table,
                             const std::function<std::string(long fd)>& fd_path);

/// `extmem threads`.
struct ThreadsOptions {
  ProcessFilter processes;                       ///< which processes (at least one criterion)
  std::chrono::microseconds window{100000};      ///< how long to watch (the snapshot watches 100 ms)
  std::chrono::microseconds period{10000};       ///< time between readings
  bool histogram = false;                        ///< --sample: print each thread's histogram
  std::size_t top = 8;                           ///< histogram rows per thread
  std::size_t max_threads = 4096;                ///< threads sampled at most (the rest are listed as not sampled)
  IoctlTable ioctls = IoctlTable::builtin();     ///< names for ioctl requests
};

/// Samples the threads of every matching process for `window`, then prints,
/// per thread: tid, name, state, how long it was seen in its current place,
/// the place (decoded system call or "running", with wchan), its tracer if
/// any; with `histogram`, where it was over the window. Stops early when
/// `stop` becomes true. Returns kExitOk; kExitNoProcess when no process
/// matches, a --pid is not a live process (zombies included), or a process
/// ended while being sampled (what was seen of the others is still printed); kExitPermission when the kernel refused a thread's
/// syscall file (reported per thread as "denied" with the reason);
/// kExitTracerFlagged when a tracer condition was flagged (printed with its
/// recovery steps); kExitFailed when a thread's files could not be read for
/// another reason (shown as "unreadable:" with the OS code, e.g. EMFILE: every
/// sampled thread keeps two /proc files open). Errors go to `err`.
int run_threads(const ThreadsOptions& options, std::ostream& out, std::ostream& err,
                const std::atomic<bool>* stop = nullptr);

/// `extmem threads --tracers`.
struct TracersOptions {
  bool expect_none = false;  ///< any traced thread at all is a flagged condition
};

/// Reads the status of every thread on the machine (world-readable, no
/// privileges needed) and prints each traced thread with its tracer's state
/// and wchan, the flagged conditions and one line per recovery step.
/// Returns kExitOk, kExitTracerFlagged, or kExitFailed when /proc cannot be listed.
int run_tracers(const TracersOptions& options, std::ostream& out, std::ostream& err);

}  // namespace extmem::memtools
