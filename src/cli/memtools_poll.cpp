// `extmem poll`: option parsing and signal handling only; the work is in extmem::memtools.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/duration_option.h"
#include "cli/memtools_process_options.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/poll.h"

namespace extmem::cli {
namespace {

Runner add_poll(CLI::App& app);
const Registration registered{add_poll};

// Bounds of the duration options (docs/durations.md): rounds at most an hour apart, a run up to the grammar's year.
constexpr DurationRange kPeriodRange{std::chrono::milliseconds(1), std::chrono::hours(1)};
constexpr DurationRange kRunRange{std::chrono::milliseconds(1), std::chrono::hours(24 * 366)};

// The poll options as given, kept by the command's runner.
struct PollState {
  ProcessOptions processes;
  std::string match, offset, width = "4", when, set, audit, max_processes;
  std::chrono::nanoseconds period = std::chrono::milliseconds(100);
  std::chrono::nanoseconds duration{0};
  std::uint64_t max_writes = 0;
  bool dry_run = false, all = false;
  CLI::Option *duration_option, *max_option, *max_processes_option, *all_option;
};

void define_poll_options(CLI::App* cmd, PollState* s) {
  add_process_options(*cmd, s->processes, PidOption::last);
  cmd->add_option("--match", s->match, "Mappings matching SPEC (docs/memtools.md), e.g. perms=rw-s,size=16K")->required();
  cmd->add_option("--offset", s->offset, "Bytes from each mapping's start to the word (decimal, 0x-hex, K/M/G)")->required();
  cmd->add_option("--width", s->width, "Word size in bytes: 1, 2, 4 or 8")->capture_default_str();
  cmd->add_option("--when", s->when, "Condition on the word: OP VALUE, OP one of == != < <= > >= (e.g. '==0')")->required();
  cmd->add_option("--set", s->set, "Value written when the condition holds")->required();
  add_duration_option(*cmd, "--period", s->period, "Time between rounds (default 100ms)", kPeriodRange);
  s->max_option = cmd->add_option("--max-writes", s->max_writes, "Stop after this many writes")->check(CLI::Validator(
      [](std::string& v) -> std::string {
        // Digits only: CLI11 alone would wrap "-1" around to 2^64-1 and poll would never stop.
        if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos ||
            v.find_first_not_of('0') == std::string::npos)
          return "\"" + v + "\" is not accepted: a count of writes, a whole number from 1 to 9999999999999999999";
        return {};
      },
      "COUNT"));
  s->duration_option = add_duration_option(*cmd, "--duration", s->duration, "Stop after this long", kRunRange);
  cmd->add_flag("--dry-run", s->dry_run, "Show what would be written; write nothing");
  s->max_processes_option =
      cmd->add_option("--max-processes", s->max_processes,
                      "Write to at most N of the matching processes (default 1; later matches are left alone)");
  s->all_option = cmd->add_flag("--all", s->all, "Write to every matching process (no --max-processes bound)");
  s->all_option->excludes(s->max_processes_option);
  cmd->add_option("--audit", s->audit, "Append audit lines to FILE (default: standard error)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // Empty would read as "not given" and the audit would go to standard error unasked.
            return v.empty() ? "the path is empty; accepted: a file to append to, in an existing, writable directory" : "";
          },
          "FILE"));
}

// What is written where and when: --match, --offset, --width, --when, --set.
// Returns nothing, or the exit status of a refusal it has said.
std::optional<int> parse_poll_word(const PollState& s, memtools::PollOptions& o) {
  memtools::SyntaxError bad;
  auto spec = memtools::MapSpec::parse(s.match, &bad);
  if (!spec) return memtools::print_syntax_error(std::cerr, "poll", "--match", bad);
  o.match = std::move(*spec);
  auto offset = memtools::parse_number(s.offset, memtools::NumberStyle::quantity, "offset", &bad);
  if (!offset) return memtools::print_syntax_error(std::cerr, "poll", "--offset", bad);
  o.offset = *offset;
  auto width = memtools::parse_width(s.width, &bad);
  if (!width) return memtools::print_syntax_error(std::cerr, "poll", "--width", bad);
  o.width = *width;
  auto when = memtools::parse_condition(s.when, o.width, &bad);
  if (!when) return memtools::print_syntax_error(std::cerr, "poll", "--when", bad);
  o.when = *when;
  auto set = memtools::parse_word_value(s.set, o.width, "value", &bad);
  if (!set) return memtools::print_syntax_error(std::cerr, "poll", "--set", bad);
  o.set = *set;
  return std::nullopt;
}

// How long and how far: --period, --max-writes, --duration, --dry-run,
// --all / --max-processes. Returns nothing, or the exit status of a refusal it has said.
std::optional<int> parse_poll_bounds(const PollState& s, memtools::PollOptions& o) {
  o.period_s = std::chrono::duration<double>(s.period).count();
  if (s.max_option->count() > 0) o.max_writes = s.max_writes;
  if (s.duration_option->count() > 0) o.duration_s = std::chrono::duration<double>(s.duration).count();
  o.dry_run = s.dry_run;
  if (s.all) {
    o.max_processes.reset();
  } else if (s.max_processes_option->count() > 0) {
    memtools::SyntaxError bad;
    auto n = memtools::parse_number(s.max_processes, memtools::NumberStyle::value, "count", &bad);
    if (!n) return memtools::print_syntax_error(std::cerr, "poll", "--max-processes", bad);
    if (*n == 0) {
      std::cerr << "extmem poll: --max-processes: 0 would write nothing; accepted: a count from 1 (or --all)\n";
      return memtools::kExitUsage;
    }
    o.max_processes = *n;
  }
  return std::nullopt;
}

Runner add_poll(CLI::App& app) {
  auto s = std::make_shared<PollState>();
  CLI::App* cmd = app.add_subcommand(
      "poll", "Write --set to the word at --offset of every matching mapping of the matching process (--max-processes, --all) "
      "when --when holds");
  define_poll_options(cmd, s.get());
  return [s]() -> int {
    if (s->processes.given() == 0) {
      std::cerr << "extmem poll: say which processes: --comm=NAME, --cmdline=REGEX and/or --pid=PID\n";
      return memtools::kExitUsage;
    }
    memtools::PollOptions o;
    if (auto refused = parse_process_options(s->processes, "poll", o.processes)) return *refused;
    if (auto refused = parse_poll_word(*s, o)) return *refused;
    if (auto refused = parse_poll_bounds(*s, o)) return *refused;

    auto audit = memtools::AuditLog::open(s->audit);
    if (!audit) return memtools::audit_usage_error(std::cerr, "poll", audit.error());
    auto summary = memtools::run_poll(o, *audit, std::cout, std::cerr, stop_on_interrupt());
    if (!summary) {
      std::cerr << "extmem poll: " << summary.error().message() << '\n';
      return memtools::exit_code_for(summary.error());
    }
    // A match left alone is a refusal the caller should see (nothing was written to it).
    return summary->left_out > 0 ? memtools::kExitRefused : memtools::kExitOk;
  };
}

}  // namespace
}  // namespace extmem::cli
