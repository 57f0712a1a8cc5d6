#include "extmem/watch/watch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include <fmt/format.h>

#include "extmem/os/file.h"
#include "extmem/watch/command.h"
#include "extmem/watch/plot.h"
#include "extmem/watch/procfs.h"
#include "watch/printable.h"

namespace extmem::watch {
namespace {

using Clock = std::chrono::steady_clock;

double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int usage(std::ostream& err, const std::string& option, const std::string& what) {
  err << "extmem watch: " << option << ": " << what << "\n";
  return kWatchUsage;
}

// Blocks SIGINT/SIGTERM/SIGCHLD for the run and restores the old mask after.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGCHLD);
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() {
    // Drop what is still pending (a SIGCHLD of the reaped command) before unblocking.
    timespec zero{};
    siginfo_t info;
    while (::sigtimedwait(&set_, &info, &zero) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  const sigset_t& set() const { return set_; }
  const sigset_t& old() const { return old_; }

 private:
  sigset_t set_{}, old_{};
};

class Subreaper {
 public:
  explicit Subreaper(bool on) {
    if (!on) return;
    int was = 0;
    ::prctl(PR_GET_CHILD_SUBREAPER, &was, 0, 0, 0);
    was_ = was;
    active_ = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  }
  ~Subreaper() {
    if (active_) ::prctl(PR_SET_CHILD_SUBREAPER, was_, 0, 0, 0);
  }
  Subreaper(const Subreaper&) = delete;
  Subreaper& operator=(const Subreaper&) = delete;

 private:
  int was_ = 0;
  bool active_ = false;
};

// What the wait between samples saw.
struct Events {
  std::optional<os::ExitInfo> command_ended;
  int stop_signal = 0;        // SIGINT or SIGTERM received
  bool forward = false;       // it was sent to us alone: pass it on
};

// Reaps every ended child: the command (recording how it ended) and orphans
// of the tree that were re-parented to us as subreaper.
void reap_children(WatchedCommand* cmd, Events& ev) {
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (cmd != nullptr && cmd->running() && info.si_pid == cmd->pid()) {
      if (auto e = cmd->try_reap()) ev.command_ended = e;
      else return;
    } else {
      int status = 0;
      ::waitpid(info.si_pid, &status, WNOHANG);
    }
  }
}

// Waits until `deadline` or until something ends the run; handles every
// signal that arrives meanwhile.
void wait_until(Clock::time_point deadline, const sigset_t& set, WatchedCommand* cmd, Events& ev) {
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) return;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
    timespec ts{static_cast<time_t>(left.count() / 1000000000), static_cast<long>(left.count() % 1000000000)};
    siginfo_t info{};
    const int sig = ::sigtimedwait(&set, &info, &ts);
    if (sig < 0) {
      if (errno == EAGAIN) return;
      continue;  // EINTR
    }
    if (sig == SIGCHLD) {
      reap_children(cmd, ev);
      if (ev.command_ended) return;
    } else {
      ev.stop_signal = sig;
      // A terminal's ^C reaches the whole foreground group (the command too): do not send it twice.
      ev.forward = info.si_code != SI_KERNEL;
      return;
    }
  }
}

// Checks that every --pid names a running process (not a zombie); returns 0
// or the usage status after saying why.
int check_pids(const std::vector<pid_t>& pids, std::ostream& err) {
  std::string scratch;
  for (pid_t p : pids) {
    auto dir = ProcessDir::open(p);
    if (!dir || !dir->read("stat", scratch))
      return usage(err, "--pid", fmt::format("{} is not a running process; accepted: ids of running processes", p));
    // A zombie still has its /proc entry but has exited: nothing to watch.
    if (const std::size_t paren = scratch.rfind(')'); paren != std::string::npos && paren + 2 < scratch.size() &&
                                                     (scratch[paren + 2] == 'Z' || scratch[paren + 2] == 'X'))
      return usage(err, "--pid", fmt::format("{} has exited (a zombie not yet reaped by its parent); accepted: ids "
                                             "of running processes", p));
  }
  return 0;
}

// Checks the options and the output paths before anything starts; opens --out
// into `writer` (nullopt without --out). Returns 0 or the usage status.
int check_options(const WatchOptions& o, std::optional<SeriesWriter>& writer, std::ostream& err) {
  if (o.command.empty() == o.pids.empty())
    return usage(err, "COMMAND / --pid",
                 o.command.empty() ? "nothing to watch: give -- COMMAND [ARGS...] or --pid=PID[,PID...]"
                                   : "give either -- COMMAND [ARGS...] or --pid=PID[,PID...], not both");
  if (o.period.count() <= 0) return usage(err, "--period", "must be greater than 0");
  if (int bad = check_pids(o.pids, err); bad != 0) return bad;
  if (!o.out_path.empty()) {
    auto w = SeriesWriter::open(o.out_path, o.format, SeriesColumns{o.pss, o.classes});
    if (!w) return usage(err, "--out", fmt::format("{}; accepted: a file path in an existing, writable directory, or -",
                                                   w.error().message()));
    writer = std::move(*w);
  }
  if (!o.summary_path.empty())
    if (std::string why = os::creatable_problem(o.summary_path); !why.empty()) return usage(err, "--summary", why);
  if (!o.plot_path.empty())
    if (std::string why = os::creatable_problem(o.plot_path); !why.empty()) return usage(err, "--plot", why);
  return 0;
}

// Says each new read problem once, with what it leaves empty.
void report_new_problems(Sampler& sampler, std::ostream& err) {
  for (const ReadProblem& p : sampler.take_new_problems()) {
    const char* effect = p.file == "maps"           ? "its mapping count stays empty; "
                         : p.file == "fd"           ? "its fd count stays empty; "
                         : p.file == "smaps_rollup" ? "its PSS stays empty; "
                                                    : "";
    err << fmt::format("extmem watch: pid {} ({}): {}; {}the rest of the watch goes on\n", p.pid,
                       printable(p.comm), p.error.message(), effect);
  }
}

// Why the sampling stopped, and when.
struct Stopped {
  std::string reason;
  Clock::time_point at;
};

// Samples every period from t0 into `history` (and `writer`, until a write
// fails) until something ends the watch; flushes `writer` after.
Stopped sample_until_stop(const WatchOptions& o, Sampler& sampler, History& history, std::optional<SeriesWriter>& writer,
                          const sigset_t& signals, WatchedCommand* cmdp, Events& ev, Clock::time_point t0,
                          std::ostream& err) {
  auto next = t0;
  std::string stop_reason;
  bool write_failed = false;
  for (;;) {
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<ProcessSample> rows = sampler.sample(t);
    report_new_problems(sampler, err);
    history.add(rows);
    if (writer && !write_failed) {
      if (Status w = writer->write(rows); !w) {
        err << "extmem watch: --out: " << w.error().message() << "; the time series stops here, the watch goes on\n";
        write_failed = true;
      }
    }
    if (ev.command_ended && !o.until_tree) {
      stop_reason = "command exited";
      break;
    }
    if (ev.command_ended && rows.empty()) {
      stop_reason = "the command and every descendant are gone";
      break;
    }
    if (ev.stop_signal != 0) {
      stop_reason = os::signal_name(ev.stop_signal);
      break;
    }
    if (!cmdp && rows.empty()) {
      stop_reason = "every watched process is gone";
      break;
    }
    if (o.duration && Clock::now() - t0 >= *o.duration) {
      stop_reason = "duration";
      break;
    }
    const auto now = Clock::now();
    do next += o.period;
    while (next <= now);
    auto deadline = next;
    if (o.duration) deadline = std::min(deadline, t0 + *o.duration);
    wait_until(deadline, signals, cmdp, ev);
    if (ev.command_ended && !o.until_tree) {  // nothing left to sample of the command itself
      stop_reason = "command exited";
      break;
    }
  }
  const auto t_end = Clock::now();
  if (writer && !write_failed)
    if (Status w = writer->flush(); !w) err << "extmem watch: --out: " << w.error().message() << "\n";
  return Stopped{std::move(stop_reason), t_end};
}

// Waits for the command until `give_up`, forwarding the stop signals sent to
// the watch meanwhile; records its end in `ev`.
void wait_for_command(WatchedCommand& cmd, Clock::time_point give_up, const sigset_t& signals, Events& ev) {
  while (cmd.running() && Clock::now() < give_up) {
    Events more;
    wait_until(give_up, signals, &cmd, more);
    if (more.command_ended) ev.command_ended = more.command_ended;
    if (more.stop_signal != 0 && more.forward) (void)cmd.signal(more.stop_signal);
  }
}

// Stops the command when the watch was stopped (forwarded signal or
// --duration) and gives it the grace period to end.
void stop_command(const WatchOptions& o, WatchedCommand& cmd, const sigset_t& signals, Events& ev, std::ostream& err) {
  if (!cmd.running()) return;
  int sig = 0;
  if (ev.stop_signal != 0 && ev.forward) sig = ev.stop_signal;
  if (ev.stop_signal == 0) sig = SIGTERM;  // --duration
  if (sig != 0)
    if (Status s = cmd.signal(sig); !s) err << "extmem watch: " << s.error().message() << "\n";
  wait_for_command(cmd, Clock::now() + o.grace, signals, ev);
}

// The summary of the run: its figures, how it ended, each process's.
Summary summary_of(const WatchOptions& o, const std::vector<pid_t>& roots, const History& history,
                   const Sampler& sampler, const Events& ev, bool with_command, const Stopped& stopped,
                   Clock::time_point t0, double cpu_s) {
  Summary sum;
  sum.command = o.command;
  sum.pids = roots;
  sum.period_s = std::chrono::duration<double>(o.period).count();
  sum.run_s = std::chrono::duration<double>(stopped.at - t0).count();
  sum.samples = history.samples();
  sum.stop_reason = stopped.reason;
  if (ev.command_ended) {
    sum.exit_status = shell_status(*ev.command_ended);
    sum.exit_description = ev.command_ended->describe();
  } else if (with_command) {
    sum.exit_description = "still running when the summary was written";
  }
  sum.warmup = o.warmup;
  sum.min_seen_s = std::chrono::duration<double>(o.min_seen).count();
  sum.cpu_s = cpu_s;
  sum.map_read_cpu_s = sampler.map_read_cpu_s();
  sum.map_reads = sampler.map_reads();
  sum.budget = o.budget;
  sum.tree_peak_rss_kib = history.tree_peak_rss_kib();
  sum.tree_peak_t = history.tree_peak_t();
  for (const ReadProblem& p : sampler.all_problems())
    sum.problems.push_back(ProblemNote{p.pid, p.comm, p.file, p.error.message()});
  sum.processes = summarize(history, o.warmup, sum.min_seen_s);
  return sum;
}

// Prints the summary and writes --summary and --plot; false when one of
// those files was not written (a run without them must not exit 0).
bool write_summary_outputs(const WatchOptions& o, const Summary& sum, const History& history, std::ostream& out,
                           std::ostream& err) {
  out << summary_text(sum);
  out.flush();
  bool written = true;
  if (!o.summary_path.empty())
    if (Status s = os::write_file_atomically(o.summary_path, summary_json(sum)); !s) {
      err << "extmem watch: --summary: " << s.error().message() << "\n";
      written = false;
    }
  if (!o.plot_path.empty()) {
    PlotOptions po;
    po.title = o.command.empty() ? fmt::format("extmem watch --pid={}", fmt::join(o.pids, ","))
                                 : fmt::format("extmem watch -- {}", fmt::join(o.command, " "));
    if (po.title.size() > 110) po.title = po.title.substr(0, 107) + "...";
    if (Status s = write_svg_plot(o.plot_path, history, po); !s) {
      err << "extmem watch: --plot: " << s.error().message() << "\n";
      written = false;
    }
  }
  return written;
}

}  // namespace

int run(const WatchOptions& o, std::ostream& out, std::ostream& err) {
  std::optional<SeriesWriter> writer;
  if (int bad = check_options(o, writer, err); bad != 0) return bad;

  BlockedSignals blocked;
  Subreaper subreaper(!o.command.empty());
  WatchedCommand cmd;
  std::vector<pid_t> roots = o.pids;
  if (!o.command.empty()) {
    auto started = WatchedCommand::start(o.command, &blocked.old());
    if (!started) {
      err << "extmem watch: cannot start the command: " << started.error().message() << "\n";
      return started.error().is_errno(ENOENT) ? kWatchNotFound : kWatchCannotExecute;
    }
    cmd = std::move(*started);
    roots = {cmd.pid()};
  }
  WatchedCommand* cmdp = o.command.empty() ? nullptr : &cmd;

  SamplerOptions so;
  so.classes = o.classes;
  so.pss = o.pss;
  so.budget = o.budget;
  so.adopt_own_children = !o.command.empty();
  Sampler sampler(roots, so);
  History history;
  Events ev;
  const double cpu0 = process_cpu_s();
  const auto t0 = Clock::now();
  const Stopped stopped = sample_until_stop(o, sampler, history, writer, blocked.set(), cmdp, ev, t0, err);
  if (cmdp) stop_command(o, cmd, blocked.set(), ev, err);

  const Summary sum = summary_of(o, roots, history, sampler, ev, cmdp != nullptr, stopped, t0, process_cpu_s() - cpu0);
  const int failed_output = write_summary_outputs(o, sum, history, out, err) ? 0 : kWatchOutputFailed;

  if (!cmdp) return failed_output;
  if (!ev.command_ended) {
    // The command outlived the grace period: keep forwarding stop signals until it ends.
    reap_children(cmdp, ev);
    while (cmd.running() && !ev.command_ended)
      wait_for_command(cmd, Clock::now() + std::chrono::hours(24), blocked.set(), ev);
    if (!ev.command_ended) return 1;
  }
  const int status = shell_status(*ev.command_ended);
  return status == 0 ? failed_output : status;
}

}  // namespace extmem::watch
