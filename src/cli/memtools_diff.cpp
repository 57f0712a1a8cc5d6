// `extmem diff`: option parsing only; the work is in extmem::memtools (diff_command.h).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/diff_command.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/word_access.h"
#include "cli/duration_option.h"

namespace extmem::cli {
namespace {

Runner add_diff(CLI::App& app);
const Registration registered_diff{add_diff};

int usage(const std::string& message) {
  std::cerr << "extmem diff: " << message << '\n';
  return memtools::kExitUsage;
}

// The diff options as given, kept by the command's runner.
struct DiffState {
  std::string pid, match, file, ram_map, range, width = "4", rounds, max_pages = "20", max_words = "8",
                                                max_bytes = "4G";
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  std::vector<std::string> command;
  bool watch = false, json = false;
  CLI::App* cmd = nullptr;
  bool given(const char* name) const { return cmd->get_option(name)->count() > 0; }
};

constexpr const char* kDiff = "diff";

void define_diff_options(CLI::App* cmd, DiffState* s) {
  cmd->footer("Usage: extmem diff (--pid=PID [--match=SPEC] | --file=F [--ram-map=M] [--range=ADDR:SIZE,...]) "
              "[--interval=1s | -- COMMAND [ARGS...]]");
  cmd->add_option("--pid", s->pid, "Process whose readable mappings are compared (through /proc/PID/mem; not stopped)");
  cmd->add_option("--match", s->match, "With --pid: only mappings matching SPEC (docs/memtools.md)");
  cmd->add_option("--file", s->file, "A file instead, e.g. a guest RAM image (memory-mapped read-only)");
  cmd->add_option("--ram-map", s->ram_map, "With --file: GPA:FILEOFF:SIZE[,...]; addresses are then guest-physical");
  cmd->add_option("--range", s->range,
                  "With --file: ADDR:SIZE[,...] to compare (ADDR hex: GPA with --ram-map, else file offset); "
                  "default: every ram-map range, or the whole file");
  add_duration_option(*cmd, "--interval", s->interval, "Time between snapshots (default 1s)",
                      DurationRange{std::chrono::milliseconds(1), std::chrono::hours(1)});
  cmd->add_option("--width", s->width, "Word size in bytes: 1, 2, 4 or 8")->capture_default_str();
  cmd->add_flag("--watch", s->watch, "Repeat: compare every --interval against the snapshot before (see --rounds)");
  cmd->add_option("--rounds", s->rounds, "Comparisons to make (default 1; 10 with --watch)");
  cmd->add_option("--max-pages", s->max_pages, "Changed pages printed per round, most-changed first")
      ->capture_default_str();
  cmd->add_option("--max-words", s->max_words, "Changed words printed per page")->capture_default_str();
  cmd->add_option("--max-bytes", s->max_bytes, "Refuse to snapshot more than this (K/M/G)")->capture_default_str();
  cmd->add_flag("--json", s->json, "JSON lines: one object per changed page, one per round");
  cmd->add_option("command", s->command, "A command run between the two snapshots (after --), instead of --interval");
}

// Each parse_diff_* below fills its part of the options and returns nothing,
// or the exit status of a refusal it has said.

// What is compared: a process's mappings (--pid, --match) or a file (--file, --ram-map, --range).
std::optional<int> parse_diff_source(const DiffState& s, memtools::DiffOptions& o, memtools::SyntaxError& bad) {
  if (s.given("--pid") == s.given("--file")) return usage("give --pid=PID (a process) or --file=FILE (a file), one of them");
  if (s.given("--pid")) {
    auto p = memtools::parse_pid(s.pid, &bad);
    if (!p) return memtools::print_syntax_error(std::cerr, kDiff, "--pid", bad);
    o.source.pid = *p;
    if (s.given("--ram-map") || s.given("--range"))
      return usage("--ram-map and --range go with --file (a process's ranges are its mappings: use --match)");
    if (s.given("--match")) {
      auto spec = memtools::MapSpec::parse(s.match, &bad);
      if (!spec) return memtools::print_syntax_error(std::cerr, kDiff, "--match", bad);
      o.source.match = std::move(*spec);
    }
    return std::nullopt;
  }
  if (s.given("--match")) return usage("--match goes with --pid (it selects mappings of a process; use --range)");
  // Opened once here so that a missing, unreadable or wrong kind of file is
  // an error naming --file (exit 5, 6 or 2, as for scan FILE).
  if (auto opened = memtools::WordTarget::open_file(s.file, false); !opened)
    return memtools::file_option_error(std::cerr, kDiff, "readable", s.file, opened.error());
  o.source.file = s.file;
  if (s.given("--ram-map")) {
    auto map = memtools::RamMap::parse(s.ram_map, &bad);
    if (!map) return memtools::print_syntax_error(std::cerr, kDiff, "--ram-map", bad);
    o.source.ram_map = std::move(*map);
  }
  if (s.given("--range")) {
    auto ranges = memtools::parse_ranges(s.range, &bad);
    if (!ranges) return memtools::print_syntax_error(std::cerr, kDiff, "--range", bad);
    o.source.ranges = std::move(*ranges);
  }
  return std::nullopt;
}

// A count option from 1 to `max` into `v`.
std::optional<int> parse_diff_count(const std::string& text, const char* option, std::uint64_t max, std::uint64_t& v,
                                    memtools::SyntaxError& bad) {
  auto n = memtools::parse_number(text, memtools::NumberStyle::value, "count", &bad);
  if (!n) return memtools::print_syntax_error(std::cerr, kDiff, option, bad);
  if (*n == 0 || *n > max)
    return usage(std::string(option) + ": \"" + text + "\" is not accepted: a count from 1 to " + std::to_string(max));
  v = *n;
  return std::nullopt;
}

// How much is printed and how often it compares: --max-pages, --max-words, --rounds.
std::optional<int> parse_diff_counts(const DiffState& s, memtools::DiffOptions& o, memtools::SyntaxError& bad) {
  std::uint64_t n = 0;
  if (auto refused = parse_diff_count(s.max_pages, "--max-pages", 1000000, n, bad)) return refused;
  o.max_pages = n;
  if (auto refused = parse_diff_count(s.max_words, "--max-words", 1024, n, bad)) return refused;
  o.max_words = n;
  o.rounds = s.watch ? 10 : 1;
  if (s.given("--rounds")) {
    if (auto refused = parse_diff_count(s.rounds, "--rounds", 1000000, n, bad)) return refused;
    if (n > 1 && !s.watch) return usage("--rounds: more than one round needs --watch");
    o.rounds = static_cast<unsigned>(n);
  }
  return std::nullopt;
}

// What happens between two snapshots: --interval passes, or a COMMAND runs.
std::optional<int> parse_diff_between(const DiffState& s, memtools::DiffOptions& o) {
  if (s.command.empty()) {
    o.interval = s.interval;
    return std::nullopt;
  }
  if (s.given("--interval")) return usage("give --interval or a COMMAND after --, not both");
  if (s.watch) return usage("--watch repeats --interval; it does not go with a COMMAND");
  if (s.command[0].empty()) return usage("COMMAND: the command name is empty; accepted: a program name or path");
  o.command = s.command;
  return std::nullopt;
}

Runner add_diff(CLI::App& app) {
  auto s = std::make_shared<DiffState>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Snapshot words of a process's mappings or a RAM image twice and print the words that changed");
  s->cmd = cmd;
  define_diff_options(cmd, s.get());
  return [s]() -> int {
    memtools::DiffOptions o;
    memtools::SyntaxError bad;
    if (auto refused = parse_diff_source(*s, o, bad)) return *refused;
    auto w = memtools::parse_width(s->width, &bad);
    if (!w) return memtools::print_syntax_error(std::cerr, kDiff, "--width", bad);
    o.source.width = *w;
    auto bytes = memtools::parse_number(s->max_bytes, memtools::NumberStyle::quantity, "size", &bad);
    if (!bytes) return memtools::print_syntax_error(std::cerr, kDiff, "--max-bytes", bad);
    if (*bytes == 0) return usage("--max-bytes: must be greater than 0");
    o.source.max_bytes = *bytes;
    if (auto refused = parse_diff_counts(*s, o, bad)) return *refused;
    if (auto refused = parse_diff_between(*s, o)) return *refused;
    o.json = s->json;
    return memtools::run_diff(o, std::cout, std::cerr);
  };
}

}  // namespace
}  // namespace extmem::cli
