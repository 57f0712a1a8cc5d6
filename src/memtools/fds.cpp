#include "extmem/memtools/fds.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>

#include <fmt/format.h>

#include "extmem/memtools/commands.h"
#include "extmem/memtools/processes.h"
#include "extmem/core/duration.h"
#include "extmem/os/fd.h"
#include "memtools/task_files.h"

namespace extmem::memtools {
namespace {

using Clock = std::chrono::steady_clock;


// The entries of an open /proc/PID/fd directory, read again from the start.
// Errors: os_error("read /proc/PID/fd", errno): ENOENT/ESRCH once the process is gone.
Status read_fd_dir(int dir, const std::string& path, std::vector<FdEntry>& out) {
  out.clear();
  if (::lseek(dir, 0, SEEK_SET) < 0) return os_error("lseek " + path, errno);
  alignas(8) char buf[16384];
  while (true) {
    const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n < 0) return os_error("read " + path, errno);
    if (n == 0) return {};
    for (long at = 0; at < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf + at + 16, sizeof reclen);
      const char* name = buf + at + 19;
      at += reclen;
      char* end = nullptr;
      const long fd = std::strtol(name, &end, 10);
      if (end == name || *end != '\0') continue;  // "." and ".."
      char target[4096];
      const ssize_t len = ::readlinkat(dir, name, target, sizeof target);
      // The directory lists for anyone who may open it; each link needs ptrace
      // read access: a refusal is "denied", never "no fds".
      if (len < 0 && (errno == EACCES || errno == EPERM)) return os_error(fmt::format("readlink {}/{}", path, name), errno);
      if (len <= 0) continue;  // closed between getdents and readlink: not seen
      out.push_back({static_cast<int>(fd), std::string(target, static_cast<std::size_t>(len))});
    }
  }
}

std::string secs(double s) { return s >= 1 ? fmt::format("{:.3f} s", s) : fmt::format("{:.1f} ms", s * 1e3); }

}  // namespace

namespace {

// Opens /proc/PID/fd and reads it once, so that a process that is gone or
// refuses is said before any sampling; returns the exit status of that
// refusal, or 0 with `dir` open and `entries` its first reading.
int open_fd_dir(pid_t pid, const std::string& path, os::UniqueFd& dir, std::vector<FdEntry>& entries,
                std::ostream& err) {
  dir = os::UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Status first = dir.valid() ? read_fd_dir(dir.get(), path, entries) : Status(os_error("open " + path, errno));
  if (first) return 0;
  err << "extmem fds: " << first.error().message() << '\n';
  if (detail::access_denied(first.error())) {
    err << "extmem fds: denied: " << detail::denial_reason(pid) << '\n';
    return kExitPermission;
  }
  return process_gone(first.error()) ? kExitNoProcess : kExitFailed;
}

// Reads the fd directory every period into `timeline` (the first reading is
// `entries`) until the duration passes, `stop` is set or the process ends
// (`ended`); returns the time of each reading (seconds from the first).
std::vector<double> sample_fds(const FdsOptions& o, int dir, const std::string& path, std::vector<FdEntry>& entries,
                               FdTimeline& timeline, const std::atomic<bool>* stop, bool& ended) {
  std::vector<double> times;
  const auto start = Clock::now();
  timespec next{};
  ::clock_gettime(CLOCK_MONOTONIC, &next);
  const double duration_s = std::chrono::duration<double>(o.duration).count();
  for (std::uint64_t i = 0;; ++i) {
    if (stop != nullptr && stop->load()) break;
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (i > 0) {
      Status st = read_fd_dir(dir, path, entries);
      // An exited process's fd directory reads empty or fails: then it is gone, not "closed everything".
      if (!st || (entries.empty() && !process_running(o.pid))) {
        ended = true;
        break;
      }
    }
    times.push_back(t);
    timeline.observe(t, entries);
    detail::advance_sample_time(next, o.period);
    if (t >= duration_s) break;
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR)
      if (stop != nullptr && stop->load()) break;
  }
  return times;
}

// The paths opened or closed while sampled, most opens first (at most --max-paths).
void print_transient_paths(const FdsOptions& o, const FdTimeline& timeline, std::ostream& out) {
  std::vector<std::pair<std::string, PathHistory>> rows(timeline.transient().begin(), timeline.transient().end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.opens != b.second.opens ? a.second.opens > b.second.opens : a.first < b.first;
  });
  std::uint64_t total_opens = 0;
  for (const auto& r : rows) total_opens += r.second.opens;
  out << fmt::format("opened or closed while sampled ({} path{}, {} opens seen):\n", rows.size(), rows.size() == 1 ? "" : "s",
                     total_opens);
  for (std::size_t i = 0; i < rows.size() && i < o.max_paths; ++i) {
    const PathHistory& h = rows[i].second;
    std::string fds;
    for (int fd : h.fds) fds += (fds.empty() ? "" : ",") + std::to_string(fd);
    out << fmt::format("  {}\n    opens seen {}, closes seen {}, first seen +{}, last seen +{}", rows[i].first, h.opens,
                       h.closes, secs(h.first_seen), secs(h.last_seen));
    if (h.shortest_samples > 0)
      out << fmt::format(", observed lifetime {} (in {} sample{}) to {}", secs(h.shortest), h.shortest_samples,
                         h.shortest_samples == 1 ? "" : "s", secs(h.longest));
    out << fmt::format(", fd{} {}\n", h.fds.size() == 1 ? "" : "s", fds.empty() ? "-" : fds);
  }
  if (rows.size() > o.max_paths) out << fmt::format("  ... {} more paths (--max-paths)\n", rows.size() - o.max_paths);
}

}  // namespace

int run_fds(const FdsOptions& o, std::ostream& out, std::ostream& err, const std::atomic<bool>* stop) {
  const std::string path = fmt::format("/proc/{}/fd", o.pid);
  auto info = read_process(o.pid);
  if (!info || info->state == 'Z' || info->state == 'X') {
    const Error e = info ? os_error("read " + path, ESRCH, "the process has exited (a zombie)") : info.error();
    err << "extmem fds: " << e.message() << '\n';
    return kExitNoProcess;
  }
  os::UniqueFd dir;
  std::vector<FdEntry> entries;
  if (int refused = open_fd_dir(o.pid, path, dir, entries, err); refused != 0) return refused;

  FdTimeline timeline;
  bool ended = false;
  const std::vector<double> times = sample_fds(o, dir.get(), path, entries, timeline, stop, ended);

  const detail::SampleGaps gaps = detail::sample_gaps(times);
  out << fmt::format("pid {} ({}): sampled {} for {} every {}: {} samples (achieved: median {}, longest gap {})\n",
                     o.pid, info->comm, path, secs(times.empty() ? 0 : times.back()), format_duration(o.period),
                     times.size(), secs(gaps.median), secs(gaps.longest));
  const auto persistent = timeline.persistent();
  out << fmt::format("open throughout ({}):\n", persistent.size());
  for (const auto& [fd, p] : persistent) out << fmt::format("  {:>5} {}\n", fd, p);
  print_transient_paths(o, timeline, out);
  out << fmt::format(
      "a sample sees an fd only while it is open: an open shorter than the period ({}) or falling in a gap between samples "
      "(the longest here {}) can be missed, so counts are lower bounds; an observed lifetime is at most two intervals shorter "
      "than the real one\n",
      format_duration(o.period), secs(gaps.longest));
  if (ended) {
    out << fmt::format("process {} ended while sampled\n", o.pid);
    err << fmt::format("extmem fds: process {} ended while sampled (ESRCH)\n", o.pid);
    return kExitNoProcess;
  }
  return kExitOk;
}

}  // namespace extmem::memtools
