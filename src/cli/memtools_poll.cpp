// `extmem poll`: option parsing and signal handling only; the work is in extmem::memtools.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/poll.h"

namespace extmem::cli {
namespace {

std::atomic<bool> g_stop{false};
void request_stop(int) { g_stop.store(true); }

Runner add_poll(CLI::App& app);
const Registration registered{add_poll};

// Seconds: a number > 0 and at most `max`.
CLI::Validator seconds(double max) {
  return CLI::Validator(
      [max](std::string& v) -> std::string {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        if (v.empty() || end == nullptr || *end != '\0' || !(d > 0 && d <= max))
          return "\"" + v + "\" is not accepted: seconds, a number greater than 0 and at most " + std::to_string(static_cast<long>(max));
        return {};
      },
      "SECONDS");
}

Runner add_poll(CLI::App& app) {
  struct State {
    std::string comm, cmdline, match, offset, width = "4", when, set, audit, max_processes;
    std::vector<std::string> pids;
    double period = 0.1;
    double duration = 0;
    std::uint64_t max_writes = 0;
    bool dry_run = false, all = false;
    CLI::Option *comm_option, *cmdline_option, *pid_option, *duration_option, *max_option, *max_processes_option,
        *all_option;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand(
      "poll", "Write --set to the word at --offset of every matching mapping of the matching process (--max-processes, --all) "
      "when --when holds");
  s->comm_option = cmd->add_option("--comm", s->comm, "Processes whose name (/proc/PID/comm) is exactly this");
  s->cmdline_option = cmd->add_option("--cmdline", s->cmdline, "Processes whose command line matches this POSIX extended regex");
  s->pid_option = cmd->add_option("--pid", s->pids, "These processes (repeat or separate with commas)")->delimiter(',');
  cmd->add_option("--match", s->match, "Mappings matching SPEC (docs/memtools.md), e.g. perms=rw-s,size=16K")->required();
  cmd->add_option("--offset", s->offset, "Bytes from each mapping's start to the word (decimal, 0x-hex, K/M/G)")->required();
  cmd->add_option("--width", s->width, "Word size in bytes: 1, 2, 4 or 8")->capture_default_str();
  cmd->add_option("--when", s->when, "Condition on the word: OP VALUE, OP one of == != < <= > >= (e.g. '==0')")->required();
  cmd->add_option("--set", s->set, "Value written when the condition holds")->required();
  cmd->add_option("--period", s->period, "Seconds between rounds")->check(seconds(3600))->capture_default_str();
  s->max_option = cmd->add_option("--max-writes", s->max_writes, "Stop after this many writes")->check(CLI::Validator(
      [](std::string& v) -> std::string {
        // Digits only: CLI11 alone would wrap "-1" around to 2^64-1 and poll would never stop.
        if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos ||
            v.find_first_not_of('0') == std::string::npos)
          return "\"" + v + "\" is not accepted: a count of writes, a whole number from 1 to 9999999999999999999";
        return {};
      },
      "COUNT"));
  s->duration_option = cmd->add_option("--duration", s->duration, "Stop after this many seconds")->check(seconds(1e9));
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
  return [s]() -> int {
    if (s->comm_option->count() + s->cmdline_option->count() + s->pid_option->count() == 0) {
      std::cerr << "extmem poll: say which processes: --comm=NAME, --cmdline=REGEX and/or --pid=PID\n";
      return memtools::kExitUsage;
    }
    memtools::PollOptions o;
    memtools::SyntaxError bad;
    if (s->comm_option->count() > 0) o.processes.comm = s->comm;
    if (s->cmdline_option->count() > 0) {
      auto re = memtools::Regex::compile(s->cmdline, "regex", &bad);
      if (!re) return memtools::print_syntax_error(std::cerr, "poll", "--cmdline", bad);
      o.processes.cmdline = std::move(*re);
    }
    for (const std::string& text : s->pids) {
      auto pid = memtools::parse_pid(text, &bad);
      if (!pid) return memtools::print_syntax_error(std::cerr, "poll", "--pid", bad);
      o.processes.pids.push_back(*pid);
    }
    auto spec = memtools::MapSpec::parse(s->match, &bad);
    if (!spec) return memtools::print_syntax_error(std::cerr, "poll", "--match", bad);
    o.match = std::move(*spec);
    auto offset = memtools::parse_number(s->offset, memtools::NumberStyle::quantity, "offset", &bad);
    if (!offset) return memtools::print_syntax_error(std::cerr, "poll", "--offset", bad);
    o.offset = *offset;
    auto width = memtools::parse_width(s->width, &bad);
    if (!width) return memtools::print_syntax_error(std::cerr, "poll", "--width", bad);
    o.width = *width;
    auto when = memtools::parse_condition(s->when, o.width, &bad);
    if (!when) return memtools::print_syntax_error(std::cerr, "poll", "--when", bad);
    o.when = *when;
    auto set = memtools::parse_word_value(s->set, o.width, "value", &bad);
    if (!set) return memtools::print_syntax_error(std::cerr, "poll", "--set", bad);
    o.set = *set;
    o.period_s = s->period;
    if (s->max_option->count() > 0) o.max_writes = s->max_writes;
    if (s->duration_option->count() > 0) o.duration_s = s->duration;
    o.dry_run = s->dry_run;
    if (s->all) {
      o.max_processes.reset();
    } else if (s->max_processes_option->count() > 0) {
      auto n = memtools::parse_number(s->max_processes, memtools::NumberStyle::value, "count", &bad);
      if (!n) return memtools::print_syntax_error(std::cerr, "poll", "--max-processes", bad);
      if (*n == 0) {
        std::cerr << "extmem poll: --max-processes: 0 would write nothing; accepted: a count from 1 (or --all)\n";
        return memtools::kExitUsage;
      }
      o.max_processes = *n;
    }

    auto audit = memtools::AuditLog::open(s->audit);
    if (!audit) return memtools::audit_usage_error(std::cerr, "poll", audit.error());
    struct sigaction sa {};
    sa.sa_handler = request_stop;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    auto summary = memtools::run_poll(o, *audit, std::cout, std::cerr, &g_stop);
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
