#include "extmem/memtools/syscall.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

struct NamedSyscall {
  long nr;
  const char* name;
};

// Generated at configure time from <sys/syscall.h> (cmake/syscall_names.cmake).
constexpr NamedSyscall kSyscalls[] = {
#include "memtools/syscall_names.inc"
    {-1, ""},
};

constexpr std::string_view kSyscallLineAccepted =
    "\"running\", \"-1 SP PC\" or \"NR A1 A2 A3 A4 A5 A6 SP PC\" (NR decimal, the rest hexadecimal)";

// One space-separated field [begin, end) of `text`, or nothing at its end.
bool next_field(std::string_view text, std::size_t& at, std::size_t& begin, std::size_t& end) {
  if (at >= text.size()) return false;
  begin = at;
  end = text.find(' ', at);
  if (end == std::string_view::npos) end = text.size();
  at = end + 1;
  return true;
}

}  // namespace

Result<SyscallSample> parse_syscall_line(std::string_view text, SyntaxError* syntax) {
  const std::string_view whole = text;
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  const auto refuse = [&](std::size_t column, std::string problem) -> Error {
    return detail::syntax_failure(syntax, "syscall line", whole, column, std::move(problem), kSyscallLineAccepted);
  };
  SyscallSample s;
  if (text == "running") return s;
  std::size_t at = 0, b = 0, e = 0;
  if (!next_field(text, at, b, e)) return refuse(0, "the line is empty");
  std::uint64_t fields[9];
  std::size_t count = 0;
  // The number: decimal, or -1 for "in the kernel, not in a system call".
  long nr = 0;
  if (text.substr(b, e - b) == "-1") {
    nr = -1;
  } else {
    detail::ScanFailure failure;
    if (text.substr(b, 2) == "0x") return refuse(b, "the system-call number is decimal");
    auto n = detail::scan_number(text, b, e, NumberStyle::value, failure);
    if (!n) return refuse(failure.column, failure.problem);
    if (*n > 100000) return refuse(b, fmt::format("{} is not a system-call number", *n));
    nr = static_cast<long>(*n);
  }
  while (next_field(text, at, b, e)) {
    if (count == 8) return refuse(b, "more than 8 numbers after the system-call number");
    detail::ScanFailure failure;
    auto n = detail::scan_number(text, b, e, NumberStyle::address, failure);
    if (!n) return refuse(failure.column, failure.problem);
    fields[count++] = *n;
  }
  if (text.size() > 0 && text.back() == ' ') return refuse(text.size() - 1, "a trailing space");
  if (nr == -1) {
    if (count != 2) return refuse(text.size(), fmt::format("\"-1\" is followed by SP and PC, found {} numbers", count));
    s.kind = SyscallSample::Kind::outside_syscall;
    s.sp = fields[0];
    s.pc = fields[1];
    return s;
  }
  if (count != 8) return refuse(text.size(), fmt::format("a system call is followed by 8 numbers, found {}", count));
  s.kind = SyscallSample::Kind::in_syscall;
  s.nr = nr;
  std::copy(fields, fields + 6, s.args.begin());
  s.sp = fields[6];
  s.pc = fields[7];
  return s;
}

std::string_view syscall_name(long nr) {
  for (const NamedSyscall& s : kSyscalls)
    if (s.nr == nr && nr >= 0) return s.name;
  return {};
}

long syscall_number(std::string_view name) {
  for (const NamedSyscall& s : kSyscalls)
    if (s.nr >= 0 && name == s.name) return s.nr;
  return -1;
}

unsigned syscall_fd_arguments(std::string_view name) {
  // The calls a waiting thread is commonly found in, and those that name an fd
  // first; the *at calls take a directory fd (AT_FDCWD shows as -100).
  static constexpr std::pair<std::string_view, unsigned> kFdArgs[] = {
      {"read", 1},          {"write", 1},         {"pread64", 1},       {"pwrite64", 1},     {"readv", 1},
      {"writev", 1},        {"preadv", 1},        {"pwritev", 1},       {"preadv2", 1},      {"pwritev2", 1},
      {"ioctl", 1},         {"close", 1},         {"fstat", 1},         {"newfstatat", 1},   {"lseek", 1},
      {"fsync", 1},         {"fdatasync", 1},     {"fcntl", 1},         {"flock", 1},        {"ftruncate", 1},
      {"getdents64", 1},    {"mmap", 1u << 4},    {"sendfile", 3},      {"splice", 5},       {"tee", 3},
      {"accept", 1},        {"accept4", 1},       {"connect", 1},       {"recvfrom", 1},     {"sendto", 1},
      {"recvmsg", 1},       {"sendmsg", 1},       {"recvmmsg", 1},      {"sendmmsg", 1},     {"shutdown", 1},
      {"bind", 1},          {"listen", 1},        {"getsockopt", 1},    {"setsockopt", 1},   {"epoll_wait", 1},
      {"epoll_pwait", 1},   {"epoll_pwait2", 1},  {"epoll_ctl", 5},     {"openat", 1},       {"openat2", 1},
      {"mkdirat", 1},       {"unlinkat", 1},      {"faccessat", 1},     {"faccessat2", 1},   {"readlinkat", 1},
      {"statx", 1},         {"fchmod", 1},        {"fchown", 1},        {"fallocate", 1},    {"sync_file_range", 1},
      {"io_uring_enter", 1}, {"fgetxattr", 1},    {"dup", 1},           {"dup2", 3},         {"dup3", 3},
      {"timerfd_gettime", 1}, {"signalfd4", 1},   {"pidfd_getfd", 1},   {"pidfd_send_signal", 1},
      {"copy_file_range", 5}, {"fstatfs", 1},     {"inotify_add_watch", 1}, {"timerfd_settime", 1},
  };
  for (const auto& [n, mask] : kFdArgs)
    if (n == name) return mask;
  return 0;
}

}  // namespace extmem::memtools
