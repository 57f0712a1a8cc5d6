// Child processes started by exec (never a bare fork: GPU drivers do not survive one).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::os {

/// How a child ended.
struct ExitInfo {
  bool exited = false;    ///< exited normally; `code` is its exit status
  int code = 0;
  bool signaled = false;  ///< killed by a signal; `signal` is its number
  int signal = 0;

  /// "exit 0", "exit 3", "SIGSEGV", ...
  std::string describe() const;
};

/// How a child ended, from a waitpid() status word.
ExitInfo decode_wait_status(int status);

/// "SIGSEGV", "SIGKILL", ... ; "signal N" when unnamed.
std::string signal_name(int sig);

/// A child process started with posix_spawn; owns the pid. The destructor kills
/// (SIGKILL) and reaps a child that is still running, so no zombie outlives it.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  /// Starts `exe` with `argv` (argv[0] included). `inherit[i]` (borrowed fds of
  /// this process) becomes fd 3 + i in the child; every other fd of ours is
  /// close-on-exec by construction. Errors: os_error("posix_spawn", err).
  static Result<ChildProcess> spawn(const std::string& exe, const std::vector<std::string>& argv,
                                    const std::vector<int>& inherit);

  pid_t pid() const noexcept { return pid_; }

  /// Waits for the child to end, at most `timeout_ms` (-1: forever). Errors:
  /// timeout (the child still runs); os_error("waitpid").
  Result<ExitInfo> wait(int timeout_ms = -1);

  /// SIGKILL and reap. Returns how it ended.
  ExitInfo kill_and_reap();

 private:
  pid_t pid_ = -1;
};

}  // namespace extmem::os
