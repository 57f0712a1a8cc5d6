// `extmem threads`: option parsing only; the work is in extmem::memtools (threads.h).
#include <sys/resource.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "cli/duration_option.h"
#include "cli/memtools_process_options.h"
#include "extmem/memtools/threads.h"

namespace extmem::cli {
namespace {

Runner add_threads(CLI::App& app);
const Registration registered{add_threads};

// A count from 1 to `max`, digits only (CLI11 alone would wrap "-1").
std::optional<std::size_t> parse_count(const std::string& v, std::size_t max) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const std::size_t n = std::stoul(v);
  if (n == 0 || n > max) return std::nullopt;
  return n;
}

// The threads options as given, kept by the command's runner.
struct ThreadsState {
  ProcessOptions processes;
  std::string top, max_threads, ioctl_names;
  std::chrono::nanoseconds sample{}, period{};
  bool tracers = false, expect_none = false;
  CLI::Option *sample_o, *period_o, *top_o, *max_o, *names_o;
};

void define_threads_options(CLI::App* cmd, ThreadsState* s) {
  add_process_options(*cmd, s->processes, PidOption::first);
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
}

int threads_usage(const std::string& msg) {
  std::cerr << "extmem threads: " << msg << '\n';
  return memtools::kExitUsage;
}

// The readings: --sample (the window, with a histogram), --period, --top,
// --max-threads. Returns nothing, or the exit status of a refusal it has said.
std::optional<int> parse_threads_readings(const ThreadsState& s, memtools::ThreadsOptions& o) {
  if (s.sample_o->count() > 0) {
    o.window = std::chrono::duration_cast<std::chrono::microseconds>(s.sample);
    o.histogram = true;
  }
  if (s.period_o->count() > 0) o.period = std::chrono::duration_cast<std::chrono::microseconds>(s.period);
  if (o.period > o.window)
    return threads_usage("--period: " + format_duration(o.period) + " is longer than the window watched (" +
                         format_duration(o.window) + "); accepted: a period no longer than --sample");
  if (o.window / o.period > 10000000)
    return threads_usage("--sample/--period: more than 10000000 readings; accepted: a shorter --sample or a longer --period");
  if (s.top_o->count() > 0) {
    auto n = parse_count(s.top, 1000);
    if (!n) return threads_usage("--top: \"" + s.top + "\" is not accepted: a whole number from 1 to 1000");
    o.top = *n;
  }
  if (s.max_o->count() > 0) {
    auto n = parse_count(s.max_threads, 100000);
    if (!n) return threads_usage("--max-threads: \"" + s.max_threads + "\" is not accepted: a whole number from 1 to 100000");
    o.max_threads = *n;
  }
  return std::nullopt;
}

// --ioctl-names: more names for the ioctl requests shown. Returns nothing, or
// the exit status of a refusal it has said.
std::optional<int> load_ioctl_names(const std::string& path, memtools::ThreadsOptions& o) {
  memtools::SyntaxError bad;
  auto table = memtools::IoctlTable::load(path, &bad);
  if (!table && !bad.subject.empty()) return memtools::print_syntax_error(std::cerr, "threads", "--ioctl-names", bad);
  if (!table)
    return threads_usage("bad --ioctl-names: " + table.error().message() +
                         "\naccepted: a readable regular file of lines FAMILY PATH-PREFIX TYPE:NR|=VALUE NAME");
  o.ioctls.add(*table);
  return std::nullopt;
}

// Each sampled thread keeps two /proc files open: lift the soft fd limit to
// the hard one so that --max-threads, not RLIMIT_NOFILE, is the bound.
void raise_open_file_limit() {
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
}

Runner add_threads(CLI::App& app) {
  auto s = std::make_shared<ThreadsState>();
  CLI::App* cmd = app.add_subcommand(
      "threads", "Where each thread of a process waits (syscall, ioctl, wchan), without ptrace; --tracers: tracer hygiene");
  define_threads_options(cmd, s.get());
  return [s]() -> int {
    const std::size_t selectors = s->processes.given();
    if (s->tracers) {
      if (selectors > 0 || s->sample_o->count() > 0 || s->period_o->count() > 0 || s->top_o->count() > 0)
        return threads_usage("--tracers looks at every process; accepted with it: --expect-none only");
      return memtools::run_tracers({s->expect_none}, std::cout, std::cerr);
    }
    if (s->expect_none) return threads_usage("--expect-none: accepted only with --tracers");
    if (selectors == 0)
      return threads_usage("say which processes: --pid=PID[,PID...], --comm=NAME and/or --cmdline=REGEX (or --tracers)");
    memtools::ThreadsOptions o;
    if (auto refused = parse_process_options(s->processes, "threads", o.processes)) return *refused;
    if (auto refused = parse_threads_readings(*s, o)) return *refused;
    if (s->names_o->count() > 0)
      if (auto refused = load_ioctl_names(s->ioctl_names, o)) return *refused;
    raise_open_file_limit();
    return memtools::run_threads(o, std::cout, std::cerr, stop_on_interrupt());
  };
}

}  // namespace
}  // namespace extmem::cli
