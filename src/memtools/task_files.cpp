#include "memtools/task_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace extmem::memtools::detail {

void advance_sample_time(timespec& next, std::chrono::microseconds period) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const auto ns = [](const timespec& t) { return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec; };
  const long long p = std::chrono::duration_cast<std::chrono::nanoseconds>(period).count();
  long long n = ns(next) + p;
  if (n < ns(now)) n = ns(now) + p;
  next.tv_sec = static_cast<time_t>(n / 1000000000LL);
  next.tv_nsec = static_cast<long>(n % 1000000000LL);
}

SampleGaps sample_gaps(const std::vector<double>& times) {
  std::vector<double> gaps;
  for (std::size_t i = 1; i < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
  SampleGaps g;
  if (!gaps.empty()) {
    std::vector<double> sorted = gaps;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    g.median = sorted[sorted.size() / 2];
    g.longest = *std::max_element(gaps.begin(), gaps.end());
  }
  return g;
}

Result<std::string> read_small_file(const std::string& path) {
  os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return os_error("open " + path, errno);
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("read " + path, errno);
    }
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

Result<ProcFile> ProcFile::open(pid_t pid, pid_t tid, std::string_view name) {
  ProcFile f;
  f.path_ = fmt::format("/proc/{}/task/{}/{}", pid, tid, name);
  f.fd_.reset(::open(f.path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.fd_.valid()) return os_error("open " + f.path_, errno);
  return f;
}

Result<std::string_view> ProcFile::read() {
  // Sized at the first read, not in open(): GCC 14 then sees no 4 KiB string moved
  // out of open() and stops warning of an out-of-bounds copy into the small-string buffer.
  if (buffer_.empty()) buffer_.resize(4096);
  while (true) {
    const ssize_t n = ::pread(fd_.get(), buffer_.data(), buffer_.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("read " + path_, errno);
    }
    // A full buffer may mean a longer text: grow and read again from the start.
    if (static_cast<std::size_t>(n) == buffer_.size() && buffer_.size() < (1u << 20)) {
      buffer_.resize(buffer_.size() * 2);
      continue;
    }
    return std::string_view(buffer_.data(), static_cast<std::size_t>(n));
  }
}

bool access_denied(const Error& e) { return e.is_errno(EACCES) || e.is_errno(EPERM); }

std::string denial_reason(pid_t pid) {
  struct stat st {};
  const std::string dir = fmt::format("/proc/{}", pid);
  std::string owner = ::stat(dir.c_str(), &st) == 0 ? fmt::format("uid {}", st.st_uid) : "an unknown uid";
  std::string reason = fmt::format(
      "the kernel allows this read only with the access a debugger would need (same uid and no extra "
      "privileges, or CAP_SYS_PTRACE), though nothing is attached; this tool runs as uid {}, the process belongs to {}",
      ::getuid(), owner);
  auto scope = read_small_file("/proc/sys/kernel/yama/ptrace_scope");
  if (scope) {
    std::string s = *scope;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    reason += fmt::format("; Yama ptrace_scope is {}{}", s,
                          s == "1"   ? " (only a parent may read its descendants)"
                          : s == "2" ? " (CAP_SYS_PTRACE only)"
                          : s == "3" ? " (no one)"
                                     : "");
  }
  return reason;
}

std::string fd_path(pid_t pid, long fd) {
  if (fd < 0) return {};
  const std::string link = fmt::format("/proc/{}/fd/{}", pid, fd);
  char buf[4096];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace extmem::memtools::detail
