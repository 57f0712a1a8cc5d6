// `extmem watch`: option parsing only; the work is in extmem::watch.
#include <charconv>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/watch/duration.h"
#include "extmem/watch/watch.h"

namespace extmem::cli {
namespace {

Runner add_watch(CLI::App& app);
const Registration registered{add_watch};

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

Runner add_watch(CLI::App& app) {
  struct State {
    watch::WatchOptions options;
    std::vector<std::string> pids, command;
    std::string period = "100ms", duration, format = "tsv", budget = "1", warmup = "20%", until = "command";
  };
  auto st = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand(
      "watch", "Sample the memory of a command (or of running pids) and of every descendant; summary, series and plot");
  cmd->footer("Usage: extmem watch [OPTIONS] -- COMMAND [ARGS...]  or  extmem watch [OPTIONS] --pid=PID[,PID...]");
  const auto period = CLI::Validator(
      [](std::string& v) -> std::string {
        auto d = watch::parse_duration(v);
        if (!d) return d.error().detail;
        if (*d < std::chrono::milliseconds(1) || *d > std::chrono::hours(1))
          return "\"" + v + "\" is not accepted: a period from 1ms to 1h, with its unit";
        return {};
      },
      "DURATION");
  const auto pid = CLI::Validator(
      [](std::string& v) -> std::string {
        long long n = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n <= 0 || n > 0x7fffffff)
          return "\"" + v + "\" is not accepted: a process id (a positive integer), several separated by commas";
        return {};
      },
      "PID");
  const auto warmup = CLI::Validator(
      [](std::string& v) -> std::string {
        if (!v.empty() && v.back() == '%') {
          auto p = watch::parse_percent(v);
          if (!p || *p >= 1.0) return "\"" + v + "\" is not accepted: a percentage of each process's time below 100%, or a duration (5s)";
          return {};
        }
        auto d = watch::parse_duration(v);
        return d ? std::string() : "\"" + v + "\" is not accepted: a percentage of each process's time (20%) or a duration (5s)";
      },
      "PERCENT%|DURATION");

  // An empty FILE would otherwise read as "not given" and the output would silently not be written.
  const auto file = CLI::Validator(
      [](std::string& v) -> std::string {
        return v.empty() ? "the path is empty; accepted: a file path in an existing, writable directory" : "";
      },
      "FILE");

  cmd->add_option("--pid", st->pids, "Attach to these running processes (and their descendants) instead of a COMMAND")
      ->delimiter(',')
      ->check(pid);
  cmd->add_option("--period", st->period, "Time between samples, with its unit (100ms, 1s)")
      ->check(period)
      ->capture_default_str();
  cmd->add_option("--duration", st->duration, "Stop after this long (the COMMAND then gets SIGTERM)")
      ->check(from_parser(watch::parse_duration, "DURATION"));
  cmd->add_option("--out", st->options.out_path, "Write the time series to FILE (- for standard output)")
      ->check(file);
  cmd->add_option("--format", st->format, "Time series format: tsv, csv or jsonl")
      ->check(from_parser(watch::parse_series_format, "tsv|csv|jsonl"))
      ->capture_default_str();
  cmd->add_option("--summary", st->options.summary_path, "Write the summary as JSON to FILE")
      ->check(file);
  cmd->add_option("--plot", st->options.plot_path, "Draw RSS and mapping count over time, per process, to FILE.svg")
      ->check(file);
  cmd->add_flag("--classes", st->options.classes, "Count mappings per class (anon, file, memfd:NAME, /dev/..., dmabuf, ...)");
  cmd->add_flag("--pss", st->options.pss, "Read PSS (the Pss: line of /proc/PID/smaps_rollup)");
  cmd->add_option("--budget", st->budget,
                  "Most CPU, in % of one core, that reading maps/smaps_rollup may average; beyond it those counts are "
                  "taken in turn (100: every sample)")
      ->check(from_parser(watch::parse_percent, "PERCENT"))
      ->capture_default_str();
  cmd->add_option("--warmup", st->warmup,
                  "Left out of the slope fits: a share of each process's time (20%) or a duration (5s)")
      ->check(warmup)
      ->capture_default_str();
  cmd->add_option("--until", st->until,
                  "With a COMMAND: stop when it exits (command), or when it and every descendant are gone (tree)")
      ->check(CLI::IsMember({"command", "tree"}))
      ->capture_default_str();
  // The COMMAND: after "--", or from the first word that is not an option of
  // ours on (then its own options stay its own).
  cmd->add_option("command", st->command, "The command to run and watch (after --)");
  cmd->positionals_at_end();

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
    o.period = *watch::parse_duration(st->period);
    if (!st->duration.empty()) o.duration = *watch::parse_duration(st->duration);
    o.format = *watch::parse_series_format(st->format);
    o.budget = *watch::parse_percent(st->budget);
    if (!st->warmup.empty() && st->warmup.back() == '%') {
      o.warmup.fraction = *watch::parse_percent(st->warmup);
    } else {
      o.warmup.seconds = std::chrono::duration<double>(*watch::parse_duration(st->warmup)).count();
    }
    return watch::run(o, std::cout, std::cerr);
  };
}

}  // namespace
}  // namespace extmem::cli
