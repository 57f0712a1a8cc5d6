#include "extmem/watch/command.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <utility>

#include <fmt/format.h>

extern char** environ;

namespace extmem::watch {
WatchedCommand::WatchedCommand(WatchedCommand&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}

WatchedCommand& WatchedCommand::operator=(WatchedCommand&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    pid_ = std::exchange(other.pid_, -1);
  }
  return *this;
}

WatchedCommand::~WatchedCommand() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    wait();
  }
}

Result<WatchedCommand> WatchedCommand::start(const std::vector<std::string>& argv, const sigset_t* child_mask) {
  if (argv.empty() || argv[0].empty())
    return Error{"posix_spawnp", ErrorKind::invalid_argument, {}, "no command given"};
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, child_mask != nullptr ? child_mask : &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, argv[0].c_str(), nullptr, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (err != 0) return os_error("posix_spawnp " + argv[0], err);
  WatchedCommand cmd;
  cmd.pid_ = pid;
  return cmd;
}

Status WatchedCommand::signal(int sig) {
  if (pid_ <= 0) return Error{"kill", ErrorKind::invalid_argument, {}, "the command was reaped already"};
  if (::kill(pid_, sig) != 0) return os_error(fmt::format("kill {} {}", pid_, os::signal_name(sig)), errno);
  return {};
}

std::optional<os::ExitInfo> WatchedCommand::try_reap() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return std::nullopt;
  pid_ = -1;
  return os::decode_wait_status(status);
}

os::ExitInfo WatchedCommand::wait() {
  if (pid_ <= 0) return {};
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return os::decode_wait_status(status);
}

int shell_status(const os::ExitInfo& info) noexcept {
  if (info.signaled) return 128 + info.signal;
  return info.code;
}

}  // namespace extmem::watch
