// The sampler: finds a process tree (roots and every descendant) and reads
// each process's figures, once per call. No threads, no timers: the caller
// decides when to sample (watch.h does it every --period).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::watch {

/// One process in one sample. Memory figures are KiB from /proc/PID/status;
/// an empty optional means "not known in this sample" (the line was absent,
/// the file could not be read, or the count was not taken this time, see
/// SamplerOptions::budget).
struct ProcessSample {
  double t = 0;                   ///< seconds since the watch started
  pid_t pid = 0;
  pid_t ppid = 0;
  std::uint64_t start_ticks = 0;  ///< start time after boot in clock ticks; (pid, start_ticks) is the identity
  std::string comm;               ///< raw comm from /proc/PID/stat
  /// /proc/PID/cmdline with NULs as spaces (at most 256 bytes), set only in the
  /// first sample of a process and again after its comm changed (an exec);
  /// empty otherwise, and when unreadable.
  std::string cmdline;
  std::optional<std::uint64_t> rss_kib, hwm_kib, anon_kib, file_kib, shmem_kib, swap_kib;
  std::optional<std::uint64_t> mappings;  ///< lines of /proc/PID/maps
  std::optional<std::uint64_t> fds;       ///< entries of /proc/PID/fd
  std::optional<std::uint64_t> threads;   ///< Threads: of /proc/PID/status
  std::optional<std::uint64_t> pss_kib;   ///< Pss: of /proc/PID/smaps_rollup (with SamplerOptions::pss)
  /// (class, count) sorted by class, with SamplerOptions::classes when `mappings` was taken.
  std::vector<std::pair<std::string, std::uint64_t>> classes;
  bool classes_taken = false;     ///< `classes` holds this sample's census
};

/// What the sampler reads and how much CPU it may spend doing it.
struct SamplerOptions {
  bool classes = false;  ///< classify mappings (parses every maps line; costs more than counting)
  bool pss = false;      ///< read the Pss: line of /proc/PID/smaps_rollup (walks page tables: costly)
  /// The "map reads" (maps count or census, smaps_rollup) cost CPU in proportion
  /// to the process's mapping count: about 0.3-0.5 us of kernel time per mapping,
  /// so 40 000 mappings cost 10-20 ms a read. They may average at most this
  /// fraction of one core, through a token bucket refilled at `budget`
  /// CPU-seconds per second and holding at most one second's worth:
  ///  - a process seen for the first time is always read;
  ///  - a process whose last read cost at most budget x (time since the last
  ///    sample) / (processes in the tree) is read every sample (small
  ///    processes keep a count per sample next to a huge one);
  ///  - the others are read while the bucket is not empty, stalest first.
  /// Every read is charged. A process not read keeps its mapping fields empty
  /// in that sample. Status, stat, fd count and the tree walk are read every
  /// sample and are not charged. 1 (100 %) means every process every sample.
  double budget = 0.01;
  /// Also follow this process's own children (the watch is the command's
  /// parent and a child subreaper, so orphans of the tree land here).
  bool adopt_own_children = false;
  /// Find children by reading every /proc/PID/stat instead of
  /// /proc/PID/task/TID/children (automatic on kernels without the latter).
  bool scan_all_processes = false;
};

/// A file the sampler could not read, reported once per process and file.
struct ReadProblem {
  pid_t pid = 0;
  std::string comm;
  std::string file;  ///< what was being read: "maps", "fd", "smaps_rollup", "status", "stat", "dir" (/proc/PID itself), "task/*/children", "/proc"
  Error error;       ///< the step and the OS code verbatim ("open /proc/42/maps: EACCES (13)")
};

/// Samples a process tree. Owns nothing but its scratch buffers; every /proc
/// file is opened and closed within sample().
class Sampler {
 public:
  /// `roots`: the processes to follow with their descendants. A root that
  /// does not exist at the first sample is simply absent.
  Sampler(std::vector<pid_t> roots, SamplerOptions options);

  /// One sample of every live, non-zombie process of the tree, roots first,
  /// then in discovery order. `t` (seconds since the start) is stored in each
  /// row and drives the budget. A process that exits between listing and
  /// reading is left out of this sample; a pid reused by an unrelated process
  /// (another start time) is not followed.
  std::vector<ProcessSample> sample(double t);

  /// Problems first met since the last call (each process and file once per run).
  std::vector<ReadProblem> take_new_problems();
  /// Every problem met so far, in the order met.
  const std::vector<ReadProblem>& all_problems() const noexcept { return all_problems_; }

  /// CPU seconds spent on map reads so far (measured with CLOCK_THREAD_CPUTIME_ID).
  double map_read_cpu_s() const noexcept { return map_cpu_s_; }
  /// Number of map reads done so far.
  std::uint64_t map_reads() const noexcept { return map_reads_; }

 private:
  struct Tracked {
    std::uint64_t start_ticks = 0;
    double last_map_read_t = -1;  ///< -1: never
    double last_map_cost_s = 0;   ///< CPU seconds of its last map read
    std::string comm;             ///< comm when cmdline was last read
    bool cmdline_read = false;
  };
  void note(pid_t pid, const std::string& comm, const char* file, Error e);

  std::vector<pid_t> roots_;
  SamplerOptions options_;
  std::unordered_map<pid_t, Tracked> tracked_;
  std::unordered_map<pid_t, std::uint64_t> root_start_;  ///< a root's identity, fixed when first seen
  std::unordered_set<std::string> reported_;
  std::vector<ReadProblem> problems_, all_problems_;
  std::string buf_, maps_buf_;
  double tokens_s_ = 0;
  double last_t_ = 0;
  bool first_ = true;
  double map_cpu_s_ = 0;
  std::uint64_t map_reads_ = 0;
};

}  // namespace extmem::watch
