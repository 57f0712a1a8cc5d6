// Private to threads/tracers: one thread's /proc files kept open and re-read
// with pread(…, 0), so that sampling at 1 kHz costs one system call per file
// per reading instead of open+read+close (procfs regenerates the text on
// every read from offset 0).
#pragma once

#include <sys/types.h>
#include <time.h>

#include <chrono>

#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::memtools::detail {

/// The whole text of a small /proc file (open, read, close).
/// Errors: os_error("open PATH"|"read PATH", errno) — ENOENT/ESRCH: gone;
/// EACCES/EPERM: denied.
Result<std::string> read_small_file(const std::string& path);

/// The next reading's time (CLOCK_MONOTONIC) for a sampler: one `period` after
/// the last planned one, or one period from now when a stall (a busy machine)
/// made it miss slots, so a late sampler does not fire a burst to catch up.
void advance_sample_time(timespec& next, std::chrono::microseconds period);

/// How regular a sampler's readings were: the median and the longest gap
/// between two readings at `times` (seconds); 0 with fewer than two.
struct SampleGaps {
  double median = 0, longest = 0;
};
SampleGaps sample_gaps(const std::vector<double>& times);

/// One open /proc/PID/task/TID/NAME file. Move-only; owns its fd.
class ProcFile {
 public:
  /// Opens /proc/PID/task/TID/NAME read-only. Errors: os_error("open PATH", errno).
  static Result<ProcFile> open(pid_t pid, pid_t tid, std::string_view name);
  /// Reads the whole text again from offset 0 into an internal buffer (valid
  /// until the next read). Errors: os_error("read PATH", errno); ESRCH once
  /// the thread has exited.
  Result<std::string_view> read();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  os::UniqueFd fd_;
  std::string buffer_;
};

/// True for EACCES/EPERM errors: the kernel refused access (another uid, Yama
/// ptrace_scope, a non-dumpable process), which is never "no data".
bool access_denied(const Error& e);

/// One line saying why a read of another process's thread files may be
/// refused here: uid, and Yama's ptrace_scope when the file exists.
std::string denial_reason(pid_t pid);

/// The target of /proc/PID/fd/FD ("/dev/null", "pipe:[123]"), or "" when it
/// cannot be read (the fd is closed, or access is denied).
std::string fd_path(pid_t pid, long fd);

}  // namespace extmem::memtools::detail
