// `extmem watch`: option parsing only; the work is in extmem::watch.
#include <charconv>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/duration_option.h"
#include "extmem/core/duration.h"
#include "extmem/watch/percent.h"
#include "extmem/watch/watch.h"

namespace extmem::cli {
namespace {

Runner add_watch(CLI::App& app);
const Registration registered{add_watch};

// Bounds of the duration options (docs/durations.md): a period short enough
// to catch a start-up, long enough to stay below the sampling cost; a run of
// any length up to the grammar's year.
constexpr DurationRange kPeriodRange{std::chrono::milliseconds(1), std::chrono::hours(1)};
constexpr DurationRange kRunRange{std::chrono::milliseconds(1), std::chrono::hours(24 * 366)};
constexpr DurationRange kWarmupRange{std::chrono::nanoseconds(0), std::chrono::hours(24 * 366)};
constexpr DurationRange kMinSeenRange{std::chrono::nanoseconds(0), std::chrono::hours(24 * 366)};

// A CLI11 validator from one of our parsers: the parser's detail is the message.
template <typename Parse>
CLI::Validator from_parser(Parse parse, const char* name) {
  return CLI::Validator(
      [parse](std::string& v) -> std::string {
        auto r = parse(v);
        return r ? std::string() : r.error().detail;
      },
      name);
}

// The watch options as given, kept by the command's runner.
struct WatchState {
  watch::WatchOptions options;
  std::vector<std::string> pids, command;
  std::chrono::nanoseconds duration{0};  ///< 0: not given (the option's range starts at 1ms)
  std::string format = "tsv", budget = "1", warmup = "20%", until = "command";
};

// --pid: each a process id (a positive integer that fits pid_t).
CLI::Validator pid_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        long long n = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n <= 0 || n > 0x7fffffff)
          return "\"" + v + "\" is not accepted: a process id (a positive integer), several separated by commas";
        return {};
      },
      "PID");
}

// A percentage needs its '%'; anything else is a duration (a bare number is seconds).
CLI::Validator warmup_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (!v.empty() && v.back() == '%') {
          auto p = watch::parse_percent(v);
          if (!p || *p >= 1.0) return "\"" + v + "\" is not accepted: a percentage of each process's time below 100%, or " + describe_duration(kWarmupRange);
          return {};
        }
        auto d = parse_duration(v, kWarmupRange);
        return d ? std::string() : d.error().detail + "; or a percentage of each process's time, below 100% (20%)";
      },
      "PERCENT%|DURATION");
}

// An empty FILE would otherwise read as "not given" and the output would silently not be written.
CLI::Validator file_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        return v.empty() ? "the path is empty; accepted: a file path in an existing, writable directory" : "";
      },
      "FILE");
}

void define_watch_options(CLI::App* cmd, WatchState& st) {
  cmd->add_option("--pid", st.pids, "Attach to these running processes (and their descendants) instead of a COMMAND")
      ->delimiter(',')
      ->check(pid_check());
  add_duration_option(*cmd, "--period", st.options.period, "Time between samples (default 100ms)", kPeriodRange);
  add_duration_option(*cmd, "--duration", st.duration, "Stop after this long (the COMMAND then gets SIGTERM)",
                      kRunRange);
  add_duration_option(*cmd, "--min-seen", st.options.min_seen,
                      "Slopes only for processes seen at least this long (default 2s)", kMinSeenRange);
  cmd->add_option("--out", st.options.out_path, "Write the time series to FILE (- for standard output)")
      ->check(file_check());
  cmd->add_option("--format", st.format, "Time series format: tsv, csv or jsonl")
      ->check(from_parser(watch::parse_series_format, "tsv|csv|jsonl"))
      ->capture_default_str();
  cmd->add_option("--summary", st.options.summary_path, "Write the summary as JSON to FILE")
      ->check(file_check());
  cmd->add_option("--plot", st.options.plot_path, "Draw RSS and mapping count over time, per process, to FILE.svg")
      ->check(file_check());
  cmd->add_flag("--classes", st.options.classes, "Count mappings per class (anon, file, memfd:NAME, /dev/..., dmabuf, ...)");
  cmd->add_flag("--pss", st.options.pss, "Read PSS (the Pss: line of /proc/PID/smaps_rollup)");
  cmd->add_option("--budget", st.budget,
                  "Most CPU, in % of one core, that reading maps/smaps_rollup may average; beyond it those counts are "
                  "taken in turn (100: every sample)")
      ->check(from_parser(watch::parse_percent, "PERCENT"))
      ->capture_default_str();
  cmd->add_option("--warmup", st.warmup,
                  "Left out of the slope fits: a share of each process's time (20%) or " +
                      describe_duration(kWarmupRange))
      ->check(warmup_check())
      ->capture_default_str();
  cmd->add_option("--until", st.until,
                  "With a COMMAND: stop when it exits (command), or when it and every descendant are gone (tree)")
      ->check(CLI::IsMember({"command", "tree"}))
      ->capture_default_str();
  // The COMMAND: after "--", or from the first word that is not an option of
  // ours on (then its own options stay its own).
  cmd->add_option("command", st.command, "The command to run and watch (after --)");
  cmd->positionals_at_end();
}

Runner add_watch(CLI::App& app) {
  auto st = std::make_shared<WatchState>();
  CLI::App* cmd = app.add_subcommand(
      "watch", "Sample the memory of a command (or of running pids) and of every descendant; summary, series and plot");
  cmd->footer("Usage: extmem watch [OPTIONS] -- COMMAND [ARGS...]  or  extmem watch [OPTIONS] --pid=PID[,PID...]");
  define_watch_options(cmd, *st);

  return [st]() -> int {
    watch::WatchOptions& o = st->options;
    if (!st->command.empty() && st->command[0].empty()) {
      std::cerr << "extmem watch: COMMAND: the command name is empty; accepted: a program name (looked up in PATH) "
                   "or path, after --\n";
      return 2;
    }
    o.command = st->command;
    if (st->until == "tree" && o.command.empty()) {
      std::cerr << "extmem watch: --until=tree goes with a COMMAND (with --pid the watch already follows every "
                   "descendant until all are gone)\n";
      return 2;
    }
    o.until_tree = st->until == "tree";
    for (const std::string& p : st->pids) o.pids.push_back(static_cast<pid_t>(std::stol(p)));
    if (st->duration.count() > 0) o.duration = st->duration;
    o.format = *watch::parse_series_format(st->format);
    o.budget = *watch::parse_percent(st->budget);
    if (!st->warmup.empty() && st->warmup.back() == '%') {
      o.warmup.fraction = *watch::parse_percent(st->warmup);
    } else {
      o.warmup.seconds = std::chrono::duration<double>(*parse_duration(st->warmup, kWarmupRange)).count();
    }
    return watch::run(o, std::cout, std::cerr);
  };
}

}  // namespace
}  // namespace extmem::cli
