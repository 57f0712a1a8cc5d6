// `extmem diff`: option parsing only; the work is in extmem::memtools (diff_command.h).
#include <iostream>
#include <memory>
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

Runner add_diff(CLI::App& app) {
  struct State {
    std::string pid, match, file, ram_map, range, width = "4", rounds, max_pages = "20", max_words = "8",
                                                  max_bytes = "4G";
    std::chrono::nanoseconds interval = std::chrono::seconds(1);
    std::vector<std::string> command;
    bool watch = false, json = false;
    CLI::App* cmd = nullptr;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Snapshot words of a process's mappings or a RAM image twice and print the words that changed");
  s->cmd = cmd;
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
  return [s]() -> int {
    const char* c = "diff";
    memtools::DiffOptions o;
    memtools::SyntaxError bad;
    auto given = [&](const char* name) { return s->cmd->get_option(name)->count() > 0; };
    if (given("--pid") == given("--file")) return usage("give --pid=PID (a process) or --file=FILE (a file), one of them");
    if (given("--pid")) {
      auto p = memtools::parse_pid(s->pid, &bad);
      if (!p) return memtools::print_syntax_error(std::cerr, c, "--pid", bad);
      o.source.pid = *p;
      if (given("--ram-map") || given("--range"))
        return usage("--ram-map and --range go with --file (a process's ranges are its mappings: use --match)");
      if (given("--match")) {
        auto spec = memtools::MapSpec::parse(s->match, &bad);
        if (!spec) return memtools::print_syntax_error(std::cerr, c, "--match", bad);
        o.source.match = std::move(*spec);
      }
    } else {
      if (given("--match")) return usage("--match goes with --pid (it selects mappings of a process; use --range)");
      // Opened once here so that a missing, unreadable or wrong kind of file is
      // an error naming --file (exit 5, 6 or 2, as for scan FILE).
      if (auto opened = memtools::WordTarget::open_file(s->file, false); !opened)
        return memtools::file_option_error(std::cerr, c, "readable", s->file, opened.error());
      o.source.file = s->file;
      if (given("--ram-map")) {
        auto map = memtools::RamMap::parse(s->ram_map, &bad);
        if (!map) return memtools::print_syntax_error(std::cerr, c, "--ram-map", bad);
        o.source.ram_map = std::move(*map);
      }
      if (given("--range")) {
        auto ranges = memtools::parse_ranges(s->range, &bad);
        if (!ranges) return memtools::print_syntax_error(std::cerr, c, "--range", bad);
        o.source.ranges = std::move(*ranges);
      }
    }
    auto w = memtools::parse_width(s->width, &bad);
    if (!w) return memtools::print_syntax_error(std::cerr, c, "--width", bad);
    o.source.width = *w;
    auto bytes = memtools::parse_number(s->max_bytes, memtools::NumberStyle::quantity, "size", &bad);
    if (!bytes) return memtools::print_syntax_error(std::cerr, c, "--max-bytes", bad);
    if (*bytes == 0) return usage("--max-bytes: must be greater than 0");
    o.source.max_bytes = *bytes;
    auto count = [&](const std::string& text, const char* option, std::uint64_t max, std::uint64_t& v) -> int {
      auto n = memtools::parse_number(text, memtools::NumberStyle::value, "count", &bad);
      if (!n) return memtools::print_syntax_error(std::cerr, c, option, bad);
      if (*n == 0 || *n > max)
        return usage(std::string(option) + ": \"" + text + "\" is not accepted: a count from 1 to " + std::to_string(max));
      v = *n;
      return 0;
    };
    std::uint64_t n = 0;
    if (int e = count(s->max_pages, "--max-pages", 1000000, n)) return e;
    o.max_pages = n;
    if (int e = count(s->max_words, "--max-words", 1024, n)) return e;
    o.max_words = n;
    o.rounds = s->watch ? 10 : 1;
    if (given("--rounds")) {
      if (int e = count(s->rounds, "--rounds", 1000000, n)) return e;
      if (n > 1 && !s->watch) return usage("--rounds: more than one round needs --watch");
      o.rounds = static_cast<unsigned>(n);
    }
    if (!s->command.empty()) {
      if (given("--interval")) return usage("give --interval or a COMMAND after --, not both");
      if (s->watch) return usage("--watch repeats --interval; it does not go with a COMMAND");
      if (s->command[0].empty()) return usage("COMMAND: the command name is empty; accepted: a program name or path");
      o.command = s->command;
    } else {
      o.interval = s->interval;
    }
    o.json = s->json;
    return memtools::run_diff(o, std::cout, std::cerr);
  };
}

}  // namespace
}  // namespace extmem::cli
