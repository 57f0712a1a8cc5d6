#include "extmem/os/pidfd.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace extmem::os {

Result<UniqueFd> fetch_fd(int pid, int fd_number) {
  // Raw syscalls: glibc's wrappers (2.36) exist here but not on every libc the
  // toolkit builds with, and the numbers are the kernel's interface anyway.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) {
    const int e = errno;
    return os_error(fmt::format("pidfd_open(pid {})", pid), e, std::strerror(e));
  }
  const int got = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), fd_number, 0));
  if (got < 0) {
    const int e = errno;
    return os_error(fmt::format("pidfd_getfd(pid {}, fd {})", pid, fd_number), e, std::strerror(e));
  }
  return UniqueFd(got);
}

std::optional<int> yama_ptrace_scope() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int scope = -1;
  if (!(in >> scope) || scope < 0) return std::nullopt;
  return scope;
}

std::string describe_ptrace_scope(std::optional<int> scope) {
  if (!scope) return "absent (no Yama: classic ptrace rules)";
  switch (*scope) {
    case 0: return "0 (classic ptrace rules)";
    case 1: return "1 (only an ancestor or a PR_SET_PTRACER-named process may fetch)";
    case 2: return "2 (CAP_SYS_PTRACE only)";
    case 3: return "3 (no process may fetch)";
    default: return fmt::format("{} (unknown value)", *scope);
  }
}

}  // namespace extmem::os
