// `extmem fds`: option parsing only; the work is in extmem::memtools (fds.h).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/fds.h"
#include "extmem/memtools/processes.h"
#include "cli/duration_option.h"
#include "cli/memtools_process_options.h"

namespace extmem::cli {
namespace {

Runner add_fds(CLI::App& app);
const Registration registered{add_fds};

Runner add_fds(CLI::App& app) {
  struct State {
    std::string pid, max_paths;
    std::chrono::nanoseconds period{}, duration{};
    CLI::Option *period_o, *duration_o, *max_o;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand("fds", "Files a process opens and closes, seen by sampling /proc/PID/fd (no ptrace)");
  cmd->add_option("--pid", s->pid, "Process id")->required();
  using namespace std::chrono_literals;
  s->period_o = add_duration_option(*cmd, "--period", s->period, "Time between samples (default 1ms)", {100us, 1h});
  s->duration_o = add_duration_option(*cmd, "--duration", s->duration, "How long to sample (default 10s)",
                                      {1ms, std::chrono::hours(24 * 366)});
  s->max_o = cmd->add_option("--max-paths", s->max_paths, "Transient paths printed at most (default 200, 1 to 100000)");
  return [s]() -> int {
    memtools::FdsOptions o;
    memtools::SyntaxError bad;
    auto pid = memtools::parse_pid(s->pid, &bad);
    if (!pid) return memtools::print_syntax_error(std::cerr, "fds", "--pid", bad);
    o.pid = *pid;
    if (s->period_o->count() > 0) o.period = std::chrono::duration_cast<std::chrono::microseconds>(s->period);
    if (s->duration_o->count() > 0) o.duration = std::chrono::duration_cast<std::chrono::microseconds>(s->duration);
    const auto usage = [](const std::string& msg) {
      std::cerr << "extmem fds: " << msg << '\n';
      return memtools::kExitUsage;
    };
    if (o.period > o.duration)
      return usage("--period is longer than --duration; accepted: a period no longer than the duration");
    if (o.duration / o.period > 10000000)
      return usage("--duration/--period: more than 10000000 samples; accepted: a shorter --duration or a longer --period");
    if (s->max_o->count() > 0) {
      const std::string& v = s->max_paths;
      if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos || std::stoul(v) == 0 ||
          std::stoul(v) > 100000)
        return usage("--max-paths: \"" + v + "\" is not accepted: a whole number from 1 to 100000");
      o.max_paths = std::stoul(v);
    }
    return memtools::run_fds(o, std::cout, std::cerr, stop_on_interrupt());
  };
}

}  // namespace
}  // namespace extmem::cli
