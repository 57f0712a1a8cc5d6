// `extmem fds`: the files a process opens and closes, seen by sampling
// /proc/PID/fd at a millisecond period (no ptrace, nothing stopped). An fd that
// is opened and closed between two samples is not seen: the output says so and
// counts are lower bounds. docs/memtools.md shows the output.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace extmem::memtools {

/// One entry of /proc/PID/fd at one sample.
struct FdEntry {
  int fd = -1;       ///< the descriptor number
  std::string path;  ///< readlink of /proc/PID/fd/N: "/etc/passwd", "pipe:[123]", "anon_inode:[eventfd]"
};

/// What was seen of one path over a run.
struct PathHistory {
  std::uint64_t opens = 0;          ///< instances seen to appear after the first sample (lower bound of real opens)
  std::uint64_t closes = 0;         ///< instances seen to disappear
  double first_seen = 0;            ///< seconds from the first sample: first sample showing the path
  double last_seen = 0;             ///< ... last sample showing it
  double shortest = 0;              ///< observed lifetime (last - first sample holding one instance), seconds
  double longest = 0;
  std::uint64_t shortest_samples = 0;  ///< samples the shortest instance was seen in
  std::set<int> fds;                ///< descriptor numbers it was seen on
};

/// Follows fd instances across samples: an instance is an (fd, path) pair seen
/// in consecutive samples; a different path on the same fd number is a close
/// and a new open. Times are seconds from the first sample, non-decreasing.
class FdTimeline {
 public:
  /// Records one sample taken at `t` seconds.
  void observe(double t, const std::vector<FdEntry>& entries);

  /// Instances open in every sample from the first to the last: fd -> path.
  std::map<int, std::string> persistent() const;

  /// Per path, everything else: paths opened and/or closed while sampled.
  /// Instances already open at the first sample count no open; instances still
  /// open at the last sample count no close.
  const std::map<std::string, PathHistory>& transient() const { return transient_; }

  std::uint64_t samples() const { return samples_; }

 private:
  struct Open {
    std::string path;
    double first = 0, last = 0;
    std::uint64_t seen = 0;
    bool from_start = false;  // present in the first sample
  };
  void close(int fd, const Open& o);
  std::map<int, Open> open_;
  std::map<std::string, PathHistory> transient_;
  std::uint64_t samples_ = 0;
};

/// `extmem fds`.
struct FdsOptions {
  pid_t pid = 0;
  std::chrono::microseconds period{1000};       ///< time between samples
  std::chrono::microseconds duration{10000000};  ///< how long to sample
  std::size_t max_paths = 200;                   ///< transient paths printed at most (most opened first)
};

/// Samples /proc/PID/fd (getdents + readlink per fd per sample) for the
/// duration, then prints the persistent fds once and, per transient path,
/// opens seen, first/last seen, shortest/longest observed lifetime and the fd
/// numbers used, with the achieved sampling interval and what a sampler at
/// that period cannot see. Returns kExitOk; kExitNoProcess when the process
/// does not exist or ended while sampled (what was seen is printed);
/// kExitPermission when /proc/PID/fd cannot be read (with the reason).
int run_fds(const FdsOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>* stop = nullptr);

}  // namespace extmem::memtools
