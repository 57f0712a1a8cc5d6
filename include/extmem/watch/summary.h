// The end-of-run summary of `extmem watch`: per process, peaks, the values at
// each tenth of its time, least-squares slopes after a warm-up and the mapping
// class that grew most; printed as text and written as JSON.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extmem/watch/sampler.h"

namespace extmem::watch {

/// Every sample of one process (one identity: pid and start time), kept for
/// the summary and the plot.
struct ProcessHistory {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;
  pid_t ppid = 0;        ///< as last seen
  std::string comm;      ///< as last seen (an exec changes it)
  std::string cmdline;   ///< as last read (ProcessSample::cmdline), arguments separated by spaces
  struct Point {
    double t = 0;  ///< seconds since the watch started
    std::optional<std::uint64_t> rss_kib, hwm_kib, mappings, fds, threads, swap_kib, pss_kib;
  };
  std::vector<Point> points;
  std::vector<std::string> class_names;  ///< index -> class name, in order of first appearance
  struct ClassPoint {
    double t = 0;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> counts;  ///< (index into class_names, mappings)
  };
  std::vector<ClassPoint> class_points;  ///< samples whose census was taken (--classes)
};

/// Accumulates samples by process identity.
class History {
 public:
  /// Adds one sample (every row must carry the same t).
  void add(std::span<const ProcessSample> rows);
  /// Processes in order of first appearance.
  const std::vector<ProcessHistory>& processes() const noexcept { return processes_; }
  std::size_t samples() const noexcept { return samples_; }
  double last_t() const noexcept { return last_t_; }
  /// Largest sum of VmRSS over the processes of one sample, in KiB, and when.
  std::uint64_t tree_peak_rss_kib() const noexcept { return tree_peak_rss_kib_; }
  double tree_peak_t() const noexcept { return tree_peak_t_; }

 private:
  std::vector<ProcessHistory> processes_;
  std::map<std::pair<pid_t, std::uint64_t>, std::size_t> index_;  ///< (pid, start_ticks) -> processes_ index
  std::vector<std::unordered_map<std::string, std::uint32_t>> class_index_;
  std::size_t samples_ = 0;
  double last_t_ = 0;
  std::uint64_t tree_peak_rss_kib_ = 0;
  double tree_peak_t_ = 0;
};

/// Why a Fit has no slope.
enum class FitGap {
  none,             ///< there is a slope
  seen_too_briefly, ///< the process was seen for less than the minimum (--min-seen; default kMinSeenSeconds)
  too_few_points,   ///< fewer than kMinFitPoints points after the warm-up (or all at one time)
};

/// "seen for less than 2s" / "fewer than 5 samples after the warm-up": the
/// reason as the summary prints it; empty for FitGap::none.
std::string fit_gap_text(FitGap gap, double min_seen_s);

/// A least-squares line through (t, value) points.
struct Fit {
  bool valid = false;     ///< at least kMinFitPoints points, not all at one time, in the window
  FitGap gap = FitGap::too_few_points;  ///< why there is no slope (none when valid)
  double from_s = 0;      ///< window start (after the warm-up), seconds since the watch started
  double to_s = 0;        ///< window end
  std::size_t points = 0;
  double per_s = 0;       ///< slope in value units per second
};

/// Fewer points than this after the warm-up give no slope.
inline constexpr std::size_t kMinFitPoints = 5;

/// A process seen for less than this many seconds gets no slope by default:
/// a probe child living 0.1 s has a start-up burst, not a steady state, and
/// extrapolating it "per 10 s" printed thousands of MiB for a few MiB gained.
inline constexpr double kMinSeenSeconds = 2.0;

/// Least-squares slope of `points` (t seconds, value) with t >= from_s.
Fit fit_slope(std::span<const std::pair<double, double>> points, double from_s);

/// The values at one tenth of a process's observed time.
struct TenthValue {
  double fraction = 0;  ///< 0.0, 0.1, ..., 1.0 of [first_s, last_s]
  double t = 0;         ///< the time that stands for it: the last sample at or before it
  std::optional<std::uint64_t> rss_kib, mappings;
};

/// The mapping class with the steepest positive least-squares slope after the warm-up.
struct ClassGrowth {
  std::string name;
  double per_s = 0;         ///< mappings per second
  std::int64_t delta = 0;   ///< count at the last census minus count at the first census after the warm-up
};

/// Summary of one process.
struct ProcessSummary {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;
  pid_t ppid = 0;
  std::string comm;
  std::string cmdline;
  double first_s = 0, last_s = 0;  ///< first and last sample that saw it
  std::size_t samples = 0;
  bool seen_at_end = false;        ///< present in the last sample of the run
  std::optional<std::uint64_t> peak_hwm_kib, peak_rss_kib, peak_mappings, peak_fds, peak_threads, peak_swap_kib,
      peak_pss_kib;
  std::vector<TenthValue> tenths;  ///< 11 entries: 0 %, 10 %, ..., 100 %
  Fit rss_fit;                     ///< VmRSS, KiB per second
  Fit mappings_fit;                ///< mapping count per second (samples where it was counted)
  std::optional<ClassGrowth> class_grew_most;  ///< with --classes, when some class grew
};

/// Where the fits start: after `fraction` of each process's observed time,
/// or after `seconds` from its first sample when set.
struct Warmup {
  double fraction = 0.2;
  std::optional<double> seconds;
};

/// One problem for the report: who, which file, the error text.
struct ProblemNote {
  pid_t pid = 0;
  std::string comm, file, error;
};

/// The whole run's summary. summarize() fills the per-process part; the caller
/// (watch.cpp) fills the run's facts.
struct Summary {
  std::vector<std::string> command;  ///< empty in --pid mode
  std::vector<pid_t> pids;           ///< --pid roots, or the command's pid
  double period_s = 0;
  double run_s = 0;                  ///< wall time from the first sample to the end
  std::size_t samples = 0;
  std::string stop_reason;           ///< "command exited", "duration", "SIGINT", "all processes gone", ...
  std::optional<int> exit_status;    ///< the watch's exit status (the command's), command mode
  std::string exit_description;      ///< "exit 0", "SIGTERM"
  Warmup warmup;
  double min_seen_s = kMinSeenSeconds;  ///< processes seen for less get no slope
  double cpu_s = 0;                  ///< CPU (user + system) the watch used, all of it
  double map_read_cpu_s = 0;         ///< of which map reads
  std::uint64_t map_reads = 0;
  double budget = 0;                 ///< the map-read budget, fraction of one core
  std::uint64_t tree_peak_rss_kib = 0;
  double tree_peak_t = 0;
  std::vector<ProblemNote> problems;
  std::vector<ProcessSummary> processes;
};

/// Per-process summaries of `history` (peaks, tenths, fits after `warmup`,
/// class growth). A process seen (first to last sample) for less than
/// `min_seen_s` seconds gets no fits and no class growth (FitGap::seen_too_briefly).
std::vector<ProcessSummary> summarize(const History& history, const Warmup& warmup,
                                      double min_seen_s = kMinSeenSeconds);

/// A short name for a process in tables and legends: the base name of
/// argv[0] and the arguments from `cmdline` (comm when there is none), cut to
/// `max_chars` with "..." and reduced to printable ASCII.
std::string process_label(const std::string& comm, const std::string& cmdline, std::size_t max_chars);

/// The summary as text for a terminal (ends with a newline).
std::string summary_text(const Summary& summary);

/// The summary as a JSON document (schema "extmem-watch-summary", version 1;
/// documented in docs/watch.md), pretty-printed, ending with a newline.
std::string summary_json(const Summary& summary);

}  // namespace extmem::watch
