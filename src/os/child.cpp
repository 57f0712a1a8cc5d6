#include "extmem/os/child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "extmem/os/fd.h"

extern char** environ;

namespace extmem::os {

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  if (abbrev == nullptr) return fmt::format("signal {}", sig);
  return fmt::format("SIG{}", abbrev);
}

std::string ExitInfo::describe() const {
  if (signaled) return signal_name(signal);
  return fmt::format("exit {}", code);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) kill_and_reap();
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) kill_and_reap();
}

Result<ChildProcess> ChildProcess::spawn(const std::string& exe, const std::vector<std::string>& argv,
                                         const std::vector<int>& inherit) {
  // Move the inherited fds above the target range first: dup2(3, 3) would keep
  // FD_CLOEXEC set and the fd would vanish at exec, and a source of 4 would be
  // clobbered by the dup2 onto 4 before it was copied.
  std::vector<UniqueFd> staged;
  for (int fd : inherit) {
    int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 64);
    if (high < 0) return os_error("fcntl(F_DUPFD_CLOEXEC)", errno);
    staged.emplace_back(high);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (std::size_t i = 0; i < staged.size(); ++i)
    posix_spawn_file_actions_adddup2(&actions, staged[i].get(), 3 + static_cast<int>(i));
  // Fds that a library opened without O_CLOEXEC must not leak into the child either (glibc 2.34+).
  posix_spawn_file_actions_addclosefrom_np(&actions, 3 + static_cast<int>(staged.size()));

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int err = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return os_error("posix_spawn", err, exe);
  ChildProcess child;
  child.pid_ = pid;
  return child;
}

ExitInfo decode_wait_status(int status) {
  ExitInfo info;
  if (WIFEXITED(status)) {
    info.exited = true;
    info.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
  }
  return info;
}

Result<ExitInfo> ChildProcess::wait(int timeout_ms) {
  if (pid_ <= 0) return Error{"waitpid", ErrorKind::invalid_argument, {}, "no child"};
  const double start = monotonic_seconds();
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, timeout_ms < 0 ? 0 : WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return decode_wait_status(status);
    }
    if (r < 0 && errno != EINTR) return os_error("waitpid", errno);
    if (timeout_ms >= 0) {
      if ((monotonic_seconds() - start) * 1000 >= timeout_ms) return Error{"waitpid", ErrorKind::timeout, {}, fmt::format("child {} still running", pid_)};
      ::usleep(2000);
    }
  }
}

ExitInfo ChildProcess::kill_and_reap() {
  if (pid_ <= 0) return {};
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return decode_wait_status(status);
}

}  // namespace extmem::os
