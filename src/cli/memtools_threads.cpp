// `extmem threads`: option parsing only; the work is in extmem::memtools (threads.h).
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "cli/duration_option.h"
#include "extmem/memtools/threads.h"

namespace extmem::cli {
namespace {

std::atomic<bool> g_stop{false};
void request_stop(int) { g_stop.store(true); }

Runner add_threads(CLI::App& app);
const Registration registered{add_threads};

// A count from 1 to `max`, digits only (CLI11 alone would wrap "-1").
std::optional<std::size_t> parse_count(const std::string& v, std::size_t max) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const std::size_t n = std::stoul(v);
  if (n == 0 || n > max) return std::nullopt;
  return n;
}

Runner add_threads(CLI::App& app) {
  struct State {
    std::string comm, cmdline, top, max_threads, ioctl_names;
    std::chrono::nanoseconds sample{}, period{};
    std::vector<std::string> pids;
    bool tracers = false, expect_none = false;
    CLI::Option *comm_o, *cmdline_o, *pid_o, *sample_o, *period_o, *top_o, *max_o, *names_o;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand(
      "threads", "Where each thread of a process waits (syscall, ioctl, wchan), without ptrace; --tracers: tracer hygiene");
  s->pid_o = cmd->add_option("--pid", s->pids, "These processes (repeat or separate with commas)")->delimiter(',');
  s->comm_o = cmd->add_option("--comm", s->comm, "Processes whose name (/proc/PID/comm) is exactly this");
  s->cmdline_o = cmd->add_option("--cmdline", s->cmdline, "Processes whose command line matches this POSIX extended regex");
  using namespace std::chrono_literals;
  s->sample_o = add_duration_option(*cmd, "--sample", s->sample, "Watch this long and print a histogram per thread",
                                    {1ms, std::chrono::hours(24 * 366)});
  s->period_o = add_duration_option(*cmd, "--period", s->period, "Time between readings (default 10ms)", {100us, 1h});
  s->top_o = cmd->add_option("--top", s->top, "Histogram rows per thread (default 8, 1 to 1000)");
  s->max_o = cmd->add_option("--max-threads", s->max_threads, "Threads sampled at most (default 4096, 1 to 100000)");
  s->names_o = cmd->add_option("--ioctl-names", s->ioctl_names,
                               "FILE of extra ioctl names: lines FAMILY PATH-PREFIX TYPE:NR|=VALUE NAME (docs/memtools.md)");
  cmd->add_flag("--tracers", s->tracers, "Every traced thread on the machine, its tracer's state, flags and recovery steps");
  cmd->add_flag("--expect-none", s->expect_none, "With --tracers: any traced thread at all exits 8");
  return [s]() -> int {
    const auto usage = [](const std::string& msg) {
      std::cerr << "extmem threads: " << msg << '\n';
      return memtools::kExitUsage;
    };
    const std::size_t selectors = s->comm_o->count() + s->cmdline_o->count() + s->pid_o->count();
    if (s->tracers) {
      if (selectors > 0 || s->sample_o->count() > 0 || s->period_o->count() > 0 || s->top_o->count() > 0)
        return usage("--tracers looks at every process; accepted with it: --expect-none only");
      return memtools::run_tracers({s->expect_none}, std::cout, std::cerr);
    }
    if (s->expect_none) return usage("--expect-none: accepted only with --tracers");
    if (selectors == 0) return usage("say which processes: --pid=PID[,PID...], --comm=NAME and/or --cmdline=REGEX (or --tracers)");
    memtools::ThreadsOptions o;
    memtools::SyntaxError bad;
    if (s->comm_o->count() > 0) o.processes.comm = s->comm;
    if (s->cmdline_o->count() > 0) {
      auto re = memtools::Regex::compile(s->cmdline, "regex", &bad);
      if (!re) return memtools::print_syntax_error(std::cerr, "threads", "--cmdline", bad);
      o.processes.cmdline = std::move(*re);
    }
    for (const std::string& text : s->pids) {
      auto pid = memtools::parse_pid(text, &bad);
      if (!pid) return memtools::print_syntax_error(std::cerr, "threads", "--pid", bad);
      o.processes.pids.push_back(*pid);
    }
    if (s->sample_o->count() > 0) {
      o.window = std::chrono::duration_cast<std::chrono::microseconds>(s->sample);
      o.histogram = true;
    }
    if (s->period_o->count() > 0) o.period = std::chrono::duration_cast<std::chrono::microseconds>(s->period);
    if (o.period > o.window)
      return usage("--period: " + format_duration(o.period) + " is longer than the window watched (" +
                   format_duration(o.window) + "); accepted: a period no longer than --sample");
    if (o.window / o.period > 10000000)
      return usage("--sample/--period: more than 10000000 readings; accepted: a shorter --sample or a longer --period");
    if (s->top_o->count() > 0) {
      auto n = parse_count(s->top, 1000);
      if (!n) return usage("--top: \"" + s->top + "\" is not accepted: a whole number from 1 to 1000");
      o.top = *n;
    }
    if (s->max_o->count() > 0) {
      auto n = parse_count(s->max_threads, 100000);
      if (!n) return usage("--max-threads: \"" + s->max_threads + "\" is not accepted: a whole number from 1 to 100000");
      o.max_threads = *n;
    }
    if (s->names_o->count() > 0) {
      bad = {};
      auto table = memtools::IoctlTable::load(s->ioctl_names, &bad);
      if (!table && !bad.subject.empty()) return memtools::print_syntax_error(std::cerr, "threads", "--ioctl-names", bad);
      if (!table)
        return usage("bad --ioctl-names: " + table.error().message() +
                     "\naccepted: a readable regular file of lines FAMILY PATH-PREFIX TYPE:NR|=VALUE NAME");
      o.ioctls.add(*table);
    }
    // Each sampled thread keeps two /proc files open: lift the soft fd limit to
    // the hard one so that --max-threads, not RLIMIT_NOFILE, is the bound.
    rlimit nofile{};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
      nofile.rlim_cur = nofile.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &nofile);
    }
    struct sigaction sa {};
    sa.sa_handler = request_stop;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    return memtools::run_threads(o, std::cout, std::cerr, &g_stop);
  };
}

}  // namespace
}  // namespace extmem::cli
