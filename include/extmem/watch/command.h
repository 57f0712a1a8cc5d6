// The COMMAND of `extmem watch -- COMMAND…`: started like a shell would start
// it (PATH search, every inheritable fd passed on), owned until reaped.
// extmem::os::ChildProcess is for the probe's own helpers (exact path, fds
// closed from 3 up, the caller's signal mask); a watched command needs the
// opposite on all three, hence this class.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/os/child.h"

namespace extmem::watch {

/// A started command; owns its pid until reaped. The destructor kills
/// (SIGKILL) and reaps a command that is still running.
class WatchedCommand {
 public:
  WatchedCommand() = default;
  WatchedCommand(WatchedCommand&& other) noexcept;
  WatchedCommand& operator=(WatchedCommand&& other) noexcept;
  WatchedCommand(const WatchedCommand&) = delete;
  WatchedCommand& operator=(const WatchedCommand&) = delete;
  ~WatchedCommand();

  /// Starts argv[0] with `argv` (PATH searched when argv[0] has no '/'), this
  /// process's environment and fds (those without FD_CLOEXEC), in this
  /// process's group. `child_mask` (borrowed, may be null: empty mask) is the
  /// signal mask the command starts with: pass the mask the caller had before
  /// blocking signals for its own wait. Errors: invalid_argument (empty argv);
  /// os_error("posix_spawnp ARGV0", err): ENOENT not found, EACCES not executable.
  static Result<WatchedCommand> start(const std::vector<std::string>& argv, const sigset_t* child_mask);

  pid_t pid() const noexcept { return pid_; }
  /// Not yet reaped.
  bool running() const noexcept { return pid_ > 0; }

  /// kill(pid, sig) while not reaped. Errors: os_error("kill PID SIGNAME").
  Status signal(int sig);
  /// Reaps the command if it has ended (never blocks).
  std::optional<os::ExitInfo> try_reap();
  /// Blocks until the command ends (retrying on EINTR) and reaps it.
  os::ExitInfo wait();

 private:
  pid_t pid_ = -1;
};

/// The status a shell reports for a child: its exit code, or 128 + the
/// signal number that killed it.
int shell_status(const os::ExitInfo& info) noexcept;

}  // namespace extmem::watch
