#include "extmem/watch/summary.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/core/duration.h"
#include "watch/json_fields.h"
#include "watch/printable.h"

namespace extmem::watch {
namespace {

using nlohmann::json;
using Point = ProcessHistory::Point;

void raise(std::optional<std::uint64_t>& peak, const std::optional<std::uint64_t>& v) {
  if (v && (!peak || *v > *peak)) peak = v;
}

std::string mib(std::uint64_t kib) { return fmt::format("{:.1f} MiB", static_cast<double>(kib) / 1024.0); }

json gap_json(const Fit& f, double min_seen_s) {
  return f.valid ? json(nullptr) : json(fit_gap_text(f.gap, min_seen_s));
}

// The duration as the grammar writes it (2s, 1500ms), for the minimum in messages.
std::string seconds_text(double s) {
  return format_duration(std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(s * 1e9))));
}

json fit_json(const Fit& f, double unit_per_s_scale, const char* per10_name, const char* per_s_name) {
  if (!f.valid) return nullptr;
  return json{{"from_s", f.from_s},
              {"to_s", f.to_s},
              {"points", f.points},
              {per_s_name, f.per_s},
              {per10_name, f.per_s * 10.0 * unit_per_s_scale}};
}

}  // namespace

void History::add(std::span<const ProcessSample> rows) {
  ++samples_;
  std::uint64_t tree_rss = 0;
  for (const ProcessSample& s : rows) {
    last_t_ = s.t;
    auto [it, fresh] = index_.try_emplace({s.pid, s.start_ticks}, processes_.size());
    if (fresh) {
      processes_.push_back(ProcessHistory{s.pid, s.start_ticks, s.ppid, s.comm, s.cmdline, {}, {}, {}});
      class_index_.emplace_back();
    }
    ProcessHistory& h = processes_[it->second];
    h.ppid = s.ppid;
    if (h.comm != s.comm) h.comm = s.comm;
    if (!s.cmdline.empty() && h.cmdline != s.cmdline) h.cmdline = s.cmdline;
    h.points.push_back(Point{s.t, s.rss_kib, s.hwm_kib, s.mappings, s.fds, s.threads, s.swap_kib, s.pss_kib});
    if (s.rss_kib) tree_rss += *s.rss_kib;
    if (s.classes_taken) {
      auto& names = class_index_[it->second];
      ProcessHistory::ClassPoint cp{s.t, {}};
      for (const auto& [name, n] : s.classes) {
        auto [cit, added] = names.try_emplace(name, static_cast<std::uint32_t>(h.class_names.size()));
        if (added) h.class_names.push_back(name);
        cp.counts.emplace_back(cit->second, n);
      }
      h.class_points.push_back(std::move(cp));
    }
  }
  if (!rows.empty() && tree_rss > tree_peak_rss_kib_) {
    tree_peak_rss_kib_ = tree_rss;
    tree_peak_t_ = rows.front().t;
  }
}

Fit fit_slope(std::span<const std::pair<double, double>> points, double from_s) {
  Fit f;
  f.from_s = from_s;
  double st = 0, sv = 0;
  std::size_t n = 0;
  double tmin = 0, tmax = 0;
  for (const auto& [t, v] : points) {
    if (t < from_s) continue;
    if (n == 0) tmin = tmax = t;
    tmin = std::min(tmin, t);
    tmax = std::max(tmax, t);
    st += t;
    sv += v;
    ++n;
  }
  f.points = n;
  f.to_s = tmax;
  f.gap = FitGap::too_few_points;
  if (n < kMinFitPoints || !(tmax > tmin)) return f;
  const double mt = st / static_cast<double>(n), mv = sv / static_cast<double>(n);
  double num = 0, den = 0;
  for (const auto& [t, v] : points) {
    if (t < from_s) continue;
    num += (t - mt) * (v - mv);
    den += (t - mt) * (t - mt);
  }
  if (!(den > 0)) return f;
  f.valid = true;
  f.gap = FitGap::none;
  f.per_s = num / den;
  return f;
}

std::string fit_gap_text(FitGap gap, double min_seen_s) {
  switch (gap) {
    case FitGap::none: return {};
    case FitGap::seen_too_briefly: return fmt::format("seen for less than {}", seconds_text(min_seen_s));
    case FitGap::too_few_points: return fmt::format("fewer than {} samples after the warm-up", kMinFitPoints);
  }
  return {};
}

namespace {

// Tenths: the last known value at or before each tenth of [first, last] of
// the process's samples (h.points is not empty).
std::vector<TenthValue> tenths_of(const ProcessHistory& h) {
  const double first_s = h.points.front().t;
  const double span = h.points.back().t - first_s;
  std::vector<TenthValue> tenths;
  std::size_t i = 0;
  std::optional<std::uint64_t> rss, maps;
  double at = first_s;
  for (int k = 0; k <= 10; ++k) {
    const double target = first_s + span * k / 10.0;
    while (i < h.points.size() && h.points[i].t <= target + 1e-9) {
      if (h.points[i].rss_kib) rss = h.points[i].rss_kib;
      if (h.points[i].mappings) maps = h.points[i].mappings;
      at = h.points[i].t;
      ++i;
    }
    tenths.push_back(TenthValue{k / 10.0, at, rss, maps});
  }
  return tenths;
}// Class growth: a least-squares slope per class over the censuses from
// `from` (the end of the warm-up); the class that grew fastest, if one grew.
std::optional<ClassGrowth> class_grew_most(const ProcessHistory& h, double from) {
  if (h.class_points.empty()) return std::nullopt;
  std::vector<std::vector<std::pair<double, double>>> per(h.class_names.size());
  std::vector<std::uint64_t> counts(h.class_names.size());
  std::vector<std::optional<std::uint64_t>> first_count(h.class_names.size());
  std::vector<std::uint64_t> last_count(h.class_names.size());
  for (const auto& cp : h.class_points) {
    if (cp.t < from) continue;
    std::fill(counts.begin(), counts.end(), 0);
    for (const auto& [idx, n] : cp.counts) counts[idx] = n;
    for (std::size_t c = 0; c < counts.size(); ++c) {
      per[c].emplace_back(cp.t, static_cast<double>(counts[c]));
      if (!first_count[c]) first_count[c] = counts[c];
      last_count[c] = counts[c];
    }
  }
  std::optional<ClassGrowth> most;
  for (std::size_t c = 0; c < per.size(); ++c) {
    const Fit f = fit_slope(per[c], from);
    if (!f.valid || !(f.per_s > 0)) continue;
    if (!most || f.per_s > most->per_s)
      most = ClassGrowth{h.class_names[c], f.per_s,
                         static_cast<std::int64_t>(last_count[c]) - static_cast<std::int64_t>(first_count[c].value_or(0))};
  }
  return most;
}

}  // namespace

std::vector<ProcessSummary> summarize(const History& history, const Warmup& warmup, double min_seen_s) {
  std::vector<ProcessSummary> out;
  for (const ProcessHistory& h : history.processes()) {
    if (h.points.empty()) continue;
    ProcessSummary s;
    s.pid = h.pid;
    s.start_ticks = h.start_ticks;
    s.ppid = h.ppid;
    s.comm = h.comm;
    s.cmdline = h.cmdline;
    s.first_s = h.points.front().t;
    s.last_s = h.points.back().t;
    s.samples = h.points.size();
    s.seen_at_end = s.last_s >= history.last_t();
    for (const Point& p : h.points) {
      raise(s.peak_hwm_kib, p.hwm_kib);
      raise(s.peak_rss_kib, p.rss_kib);
      raise(s.peak_mappings, p.mappings);
      raise(s.peak_fds, p.fds);
      raise(s.peak_threads, p.threads);
      raise(s.peak_swap_kib, p.swap_kib);
      raise(s.peak_pss_kib, p.pss_kib);
    }
    const double span = s.last_s - s.first_s;
    s.tenths = tenths_of(h);
    // A process seen too briefly gets no fit at all: its start-up, extrapolated, is noise.
    if (span + 1e-9 < min_seen_s) {
      s.rss_fit.gap = s.mappings_fit.gap = FitGap::seen_too_briefly;
      out.push_back(std::move(s));
      continue;
    }
    const double from = warmup.seconds ? s.first_s + *warmup.seconds : s.first_s + span * warmup.fraction;
    std::vector<std::pair<double, double>> xs;
    for (const Point& p : h.points)
      if (p.rss_kib) xs.emplace_back(p.t, static_cast<double>(*p.rss_kib));
    s.rss_fit = fit_slope(xs, from);
    xs.clear();
    for (const Point& p : h.points)
      if (p.mappings) xs.emplace_back(p.t, static_cast<double>(*p.mappings));
    s.mappings_fit = fit_slope(xs, from);
    s.class_grew_most = class_grew_most(h, from);
    out.push_back(std::move(s));
  }
  return out;
}

std::string process_label(const std::string& comm, const std::string& cmdline, std::size_t max_chars) {
  std::string label = comm;
  if (!cmdline.empty()) {
    const std::size_t space = cmdline.find(' ');
    std::string argv0 = cmdline.substr(0, space);
    if (const std::size_t slash = argv0.rfind('/'); slash != std::string::npos && slash + 1 < argv0.size())
      argv0 = argv0.substr(slash + 1);
    label = space == std::string::npos ? argv0 : argv0 + cmdline.substr(space);
  }
  for (char& c : label)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  if (label.size() > max_chars) label = label.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return label;
}

std::string summary_text(const Summary& sum) {
  std::string out;
  std::string what = sum.command.empty()
                         ? fmt::format("pid {}", fmt::join(sum.pids, ","))
                         : fmt::format("{}", fmt::join(sum.command, " "));
  if (what.size() > 60) what = what.substr(0, 57) + "...";
  out += fmt::format("== extmem watch: {} — {:.1f} s, {} sample{} every {:g} ms, {} process{}; stopped: {}{}\n",
                     printable(what), sum.run_s, sum.samples, sum.samples == 1 ? "" : "s", sum.period_s * 1000,
                     sum.processes.size(), sum.processes.size() == 1 ? "" : "es", sum.stop_reason,
                     sum.exit_status ? fmt::format("; command {} (watch exits {})", sum.exit_description,
                                                   *sum.exit_status)
                                     : std::string());
  const std::string warm = sum.warmup.seconds ? fmt::format("{:g} s", *sum.warmup.seconds)
                                              : fmt::format("{:g} %", sum.warmup.fraction * 100);
  out += fmt::format("{:<8} {:<16} {:>13} {:>11} {:>9} {:>5} {:>12} {:>10}  {:<28} {}\n", "pid", "comm", "seen (s)",
                     "peak VmHWM", "peak maps", "fds", "RSS MiB/10s", "maps/10s", "class that grew most", "command");
  for (const ProcessSummary& p : sum.processes) {
    const std::string seen = fmt::format("{:.1f}-{:.1f}{}", p.first_s, p.last_s, p.seen_at_end ? "" : "†");
    const std::string rss = p.rss_fit.valid ? fmt::format("{:+.3f}", p.rss_fit.per_s * 10 / 1024) : "-";
    const std::string maps = p.mappings_fit.valid ? fmt::format("{:+.1f}", p.mappings_fit.per_s * 10) : "-";
    const std::string grew = p.class_grew_most ? fmt::format("{} ({:+.1f}/10s, {:+})", printable(p.class_grew_most->name),
                                                             p.class_grew_most->per_s * 10, p.class_grew_most->delta)
                                               : "-";
    out += fmt::format("{:<8} {:<16} {:>13} {:>11} {:>9} {:>5} {:>12} {:>10}  {:<28} {}\n", p.pid,
                       printable(p.comm).substr(0, 16), seen, p.peak_hwm_kib ? mib(*p.peak_hwm_kib) : "-",
                       p.peak_mappings ? fmt::format("{}", *p.peak_mappings) : "-",
                       p.peak_fds ? fmt::format("{}", *p.peak_fds) : "-", rss, maps, grew,
                       process_label(p.comm, p.cmdline, 60));
  }
  if (std::any_of(sum.processes.begin(), sum.processes.end(), [](const auto& p) { return !p.seen_at_end; }))
    out += "† exited (or stopped being readable) before the end of the run\n";
  out += fmt::format(
      "slopes: least squares after a warm-up of the first {} of each process's time, for processes seen at least {} "
      "(\"-\": no slope, why below)\n",
      warm, seconds_text(sum.min_seen_s));
  // Why a slope is missing, one line per reason: both slopes for the same reason, or each on its own.
  std::vector<std::pair<std::string, std::vector<pid_t>>> gaps;
  const auto note = [&](std::string what, pid_t pid) {
    auto it = std::find_if(gaps.begin(), gaps.end(), [&](const auto& g) { return g.first == what; });
    if (it == gaps.end()) it = gaps.insert(gaps.end(), {std::move(what), {}});
    it->second.push_back(pid);
  };
  for (const ProcessSummary& p : sum.processes) {
    const FitGap r = p.rss_fit.valid ? FitGap::none : p.rss_fit.gap;
    const FitGap m = p.mappings_fit.valid ? FitGap::none : p.mappings_fit.gap;
    if (r != FitGap::none && r == m) {
      note("no slope (" + fit_gap_text(r, sum.min_seen_s) + ")", p.pid);
      continue;
    }
    if (r != FitGap::none) note("no RSS slope (" + fit_gap_text(r, sum.min_seen_s) + ")", p.pid);
    if (m != FitGap::none) note("no maps slope (" + fit_gap_text(m, sum.min_seen_s) + ")", p.pid);
  }
  for (const auto& [what, pids] : gaps)
    out += fmt::format("{}: pid{} {}\n", what, pids.size() == 1 ? "" : "s", fmt::join(pids, " "));
  if (!sum.processes.empty()) {
    out += "at each tenth of each process's time (0 %, 10 %, ..., 100 %):\n";
    for (const ProcessSummary& p : sum.processes) {
      std::vector<std::string> r, m;
      for (const TenthValue& v : p.tenths) {
        r.push_back(v.rss_kib ? fmt::format("{:.1f}", static_cast<double>(*v.rss_kib) / 1024) : "-");
        m.push_back(v.mappings ? fmt::format("{}", *v.mappings) : "-");
      }
      out += fmt::format("  {:<8} {:<16} RSS MiB  {}\n", p.pid, printable(p.comm).substr(0, 16), fmt::join(r, " "));
      out += fmt::format("  {:<8} {:<16} mappings {}\n", "", "", fmt::join(m, " "));
    }
  }
  out += fmt::format("tree: peak total RSS {} at {:.1f} s\n", mib(sum.tree_peak_rss_kib), sum.tree_peak_t);
  const double share = sum.run_s > 0 ? sum.cpu_s / sum.run_s : 0;
  out += fmt::format("cost: {:.2f} % of one core ({:.3f} s CPU in {:.1f} s); map reads: {}, {:.3f} s CPU, budget {:g} %\n",
                     share * 100, sum.cpu_s, sum.run_s, sum.map_reads, sum.map_read_cpu_s, sum.budget * 100);
  for (const ProblemNote& n : sum.problems)
    out += fmt::format("unreadable: pid {} ({}) {}: {}\n", n.pid, printable(n.comm), n.file, n.error);
  return out;
}

std::string summary_json(const Summary& sum) {
  json procs = json::array();
  for (const ProcessSummary& p : sum.processes) {
    json tenths = json::array();
    for (const TenthValue& v : p.tenths)
      tenths.push_back({{"fraction", v.fraction}, {"t", v.t}, {"rss_kib", opt_json(v.rss_kib)},
                        {"mappings", opt_json(v.mappings)}});
    json grew = nullptr;
    if (p.class_grew_most)
      grew = {{"class", p.class_grew_most->name},
              {"mappings_per_s", p.class_grew_most->per_s},
              {"mappings_per_10s", p.class_grew_most->per_s * 10},
              {"delta", p.class_grew_most->delta}};
    procs.push_back({{"pid", p.pid},
                     {"start_ticks", p.start_ticks},
                     {"ppid", p.ppid},
                     {"comm", p.comm},
                     {"cmdline", p.cmdline},
                     {"first_s", p.first_s},
                     {"last_s", p.last_s},
                     {"samples", p.samples},
                     {"seen_at_end", p.seen_at_end},
                     {"peak_vmhwm_kib", opt_json(p.peak_hwm_kib)},
                     {"peak_rss_kib", opt_json(p.peak_rss_kib)},
                     {"peak_mappings", opt_json(p.peak_mappings)},
                     {"peak_fds", opt_json(p.peak_fds)},
                     {"peak_threads", opt_json(p.peak_threads)},
                     {"peak_swap_kib", opt_json(p.peak_swap_kib)},
                     {"peak_pss_kib", opt_json(p.peak_pss_kib)},
                     {"tenths", std::move(tenths)},
                     {"rss_slope", fit_json(p.rss_fit, 1.0 / 1024, "mib_per_10s", "kib_per_s")},
                     {"mappings_slope", fit_json(p.mappings_fit, 1.0, "per_10s", "per_s")},
                     {"rss_slope_missing", gap_json(p.rss_fit, sum.min_seen_s)},
                     {"mappings_slope_missing", gap_json(p.mappings_fit, sum.min_seen_s)},
                     {"class_grew_most", std::move(grew)}});
  }
  json problems = json::array();
  for (const ProblemNote& n : sum.problems)
    problems.push_back({{"pid", n.pid}, {"comm", n.comm}, {"file", n.file}, {"error", n.error}});
  json doc = {{"schema", "extmem-watch-summary"},
              {"schema_version", 1},
              {"command", sum.command},
              {"pids", sum.pids},
              {"period_s", sum.period_s},
              {"run_s", sum.run_s},
              {"samples", sum.samples},
              {"stop_reason", sum.stop_reason},
              {"exit_status", sum.exit_status ? json(*sum.exit_status) : json(nullptr)},
              {"exit", sum.exit_description},
              {"warmup", sum.warmup.seconds ? json{{"seconds", *sum.warmup.seconds}}
                                            : json{{"fraction", sum.warmup.fraction}}},
              {"min_seen_s", sum.min_seen_s},
              {"cost", {{"cpu_s", sum.cpu_s},
                        {"cpu_share", sum.run_s > 0 ? sum.cpu_s / sum.run_s : 0.0},
                        {"map_reads", sum.map_reads},
                        {"map_read_cpu_s", sum.map_read_cpu_s},
                        {"budget", sum.budget}}},
              {"tree", {{"peak_rss_kib", sum.tree_peak_rss_kib}, {"peak_t", sum.tree_peak_t}}},
              {"problems", std::move(problems)},
              {"processes", std::move(procs)}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace extmem::watch
