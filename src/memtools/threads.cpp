#include "extmem/memtools/threads.h"

#include <dirent.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "extmem/memtools/commands.h"
#include "extmem/core/duration.h"
#include "extmem/memtools/task_status.h"
#include "memtools/task_files.h"
#include "memtools/tracer_check.h"

namespace extmem::memtools {
namespace {

using Clock = std::chrono::steady_clock;


std::string futex_op(std::uint64_t op) {
  static constexpr const char* kOps[] = {"FUTEX_WAIT", "FUTEX_WAKE", "FUTEX_FD", "FUTEX_REQUEUE", "FUTEX_CMP_REQUEUE",
                                         "FUTEX_WAKE_OP", "FUTEX_LOCK_PI", "FUTEX_UNLOCK_PI", "FUTEX_TRYLOCK_PI",
                                         "FUTEX_WAIT_BITSET", "FUTEX_WAKE_BITSET", "FUTEX_WAIT_REQUEUE_PI",
                                         "FUTEX_CMP_REQUEUE_PI", "FUTEX_LOCK_PI2"};
  const unsigned cmd = static_cast<unsigned>(op & 0x7f);
  std::string out = cmd < std::size(kOps) ? kOps[cmd] : fmt::format("FUTEX_{:#x}", cmd);
  if (op & 128) out += "|FUTEX_PRIVATE_FLAG";
  if (op & 256) out += "|FUTEX_CLOCK_REALTIME";
  return out;
}

// True only when the process is known to have ended: its /proc entry is gone
// or it is a zombie. A read that fails otherwise (EMFILE) is not an ending.
bool process_ended(pid_t pid) {
  auto stat = detail::read_small_file(fmt::format("/proc/{}/stat", pid));
  if (!stat) return process_gone(stat.error());
  const std::size_t paren = stat->rfind(')');
  const char state = paren != std::string::npos && paren + 2 < stat->size() ? (*stat)[paren + 2] : '?';
  return state == 'Z' || state == 'X';
}

// PF_KTHREAD in the flags field (the 9th) of /proc/PID/stat: a kernel thread
// has no user system call, and its syscall file reads "0 0x0 ..." as if in read().
bool is_kernel_thread(pid_t pid) {
  auto stat = detail::read_small_file(fmt::format("/proc/{}/stat", pid));
  if (!stat) return false;
  const std::size_t paren = stat->rfind(')');
  if (paren == std::string::npos) return false;
  std::size_t at = paren + 2;
  for (int field = 3; field < 9 && at != std::string::npos; ++field) at = stat->find(' ', at) + 1;
  if (at == 0 || at >= stat->size()) return false;
  constexpr unsigned long kPfKthread = 0x00200000;
  return (std::strtoul(stat->c_str() + at, nullptr, 10) & kPfKthread) != 0;
}

// Listing /proc/PID/task: the thread ids, sorted. Errors: os_error("open /proc/PID/task").
Result<std::vector<pid_t>> list_tasks(pid_t pid) {
  const std::string path = fmt::format("/proc/{}/task", pid);
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return os_error("open " + path, errno);
  std::vector<pid_t> tids;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && tid > 0) tids.push_back(static_cast<pid_t>(tid));
  }
  ::closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

struct Bin {
  std::uint64_t count = 0;        // readings in this place
  double longest_s = 0;           // longest run of consecutive readings in it: first to last reading, seconds
};

// One sampled thread.
struct Thread {
  pid_t pid = 0, tid = 0;
  std::optional<detail::ProcFile> syscall_file;
  std::optional<detail::ProcFile> schedstat_file;  // absent without CONFIG_SCHED_INFO: then every reading reads syscall
  std::string last_schedstat;
  Bin* bin = nullptr;            // the bin of `key`, so a repeated reading costs no map lookup
  std::optional<Error> denied;   // the refusal, verbatim
  std::optional<Error> failed;   // another error reading it (EMFILE, EIO), verbatim
  bool exited = false;
  std::string last_text;         // raw text of the last reading
  std::string key;               // where it is: "S ioctl(...) wchan=..."
  std::uint64_t run = 0;         // consecutive readings with this text
  std::size_t run_first = 0;     // index (into the global reading times) of the run's first reading
  std::size_t last_reading = 0;  // index of this thread's last reading
  std::map<std::string, Bin> bins;
  std::uint64_t readings = 0;
  std::optional<TaskStatus> first_status;
};

struct Process {
  ProcessInfo info;
  std::optional<clockid_t> cpu_clock;  // the whole process's CPU-time clock (clock_getcpuclockid)
  std::int64_t last_cpu_ns = -1;
  bool kernel_thread = false;  // PF_KTHREAD: its syscall file shows zeros, not a call
  std::vector<Thread> threads;
  bool ended = false;
  std::set<pid_t> known;        // every tid already in `threads`, for the rescans
  std::set<pid_t> not_sampled;  // threads beyond the budget (a set: every rescan meets them again)
};

class Sampler {
 public:
  Sampler(const ThreadsOptions& o) : o_(o) {}

  void add_threads(Process& p, std::size_t& budget) {
    // A zombie keeps its /proc entries (and readable syscall files) until reaped: it has ended all the same.
    if (process_ended(p.info.pid)) {
      p.ended = true;
      for (Thread& t : p.threads) t.exited = true;
      return;
    }
    auto tids = list_tasks(p.info.pid);
    if (!tids) {
      if (process_gone(tids.error())) p.ended = true;
      return;
    }
    for (pid_t tid : *tids) {
      if (p.known.count(tid) > 0) continue;
      if (budget == 0) {
        p.not_sampled.insert(tid);
        continue;
      }
      --budget;
      p.known.insert(tid);
      Thread t;
      t.pid = p.info.pid;
      t.tid = tid;
      auto status = detail::read_small_file(fmt::format("/proc/{}/task/{}/status", t.pid, tid));
      if (status) {
        auto parsed = parse_task_status(*status);
        if (parsed) t.first_status = *parsed;
      }
      auto sched = detail::ProcFile::open(t.pid, tid, "schedstat");
      if (sched) t.schedstat_file.emplace(std::move(*sched));
      auto f = detail::ProcFile::open(t.pid, tid, "syscall");
      if (f) t.syscall_file.emplace(std::move(*f));
      else if (detail::access_denied(f.error())) t.denied = f.error();
      else if (process_gone(f.error())) t.exited = true;
      else t.failed = f.error();  // e.g. EMFILE: two fds per thread stay open while sampling
      p.threads.push_back(std::move(t));
    }
  }

  std::string place(Thread& t, std::string_view text, bool kernel_thread) {
    SyntaxError bad;
    auto s = parse_syscall_line(text, &bad);
    if (!s) return fmt::format("? unreadable syscall line: {}", s.error().detail);
    if (s->kind == SyscallSample::Kind::running) return "R running";
    char state = '?';
    auto status = detail::read_small_file(fmt::format("/proc/{}/task/{}/status", t.pid, t.tid));
    if (status) {
      auto parsed = parse_task_status(*status);
      if (parsed) state = parsed->state;
    }
    auto w = detail::read_small_file(fmt::format("/proc/{}/task/{}/wchan", t.pid, t.tid));
    std::string wchan = w && *w != "0" ? *w : "";
    if (kernel_thread) return fmt::format("{} kernel thread (no user system call){}", state, wchan.empty() ? "" : " wchan=" + wchan);
    const pid_t pid = t.pid;
    std::string where = describe_syscall(*s, o_.ioctls, [pid](long fd) { return detail::fd_path(pid, fd); });
    return fmt::format("{} {}{}", state, where, wchan.empty() ? "" : " wchan=" + wchan);
  }

  // The thread is known not to have run since the last reading: one more reading in its place.
  static bool repeat(Thread& t, const std::vector<double>& times) {
    if (t.exited || t.denied || t.failed || !t.syscall_file || t.run == 0) return false;
    const std::size_t reading = times.size() - 1;
    ++t.readings;
    ++t.run;
    t.last_reading = reading;
    ++t.bin->count;
    t.bin->longest_s = std::max(t.bin->longest_s, times[reading] - times[t.run_first]);
    return true;
  }

  void read_thread(Thread& t, const std::vector<double>& times, bool kernel_thread) {
    const std::size_t reading = times.size() - 1;
    if (t.exited || t.denied || t.failed || !t.syscall_file) return;
    // schedstat (run time, wait time, times switched in) is cheap to generate;
    // the syscall file is not (it takes the exec lock and waits for the thread
    // to be off a CPU). Unchanged schedstat means the thread has not been
    // scheduled since the last reading, so it is still where it was.
    if (t.schedstat_file && t.run > 0) {
      auto sched = t.schedstat_file->read();
      if (sched && *sched == t.last_schedstat && repeat(t, times)) return;
      if (sched) t.last_schedstat = std::string(*sched);
    } else if (t.schedstat_file) {
      auto sched = t.schedstat_file->read();
      if (sched) t.last_schedstat = std::string(*sched);
    }
    auto text = t.syscall_file->read();
    if (!text) {
      if (detail::access_denied(text.error())) t.denied = text.error();
      else if (process_gone(text.error())) t.exited = true;  // ESRCH: the thread has exited
      else t.failed = text.error();
      return;
    }
    ++t.readings;
    // Here the thread has been scheduled since the last reading (or there is no
    // schedstat). Blocked in the same call as before means it woke and went back
    // in: the same place, but a new stay. A running thread is always scheduled.
    if (t.run > 0 && *text == t.last_text && t.schedstat_file && t.key.rfind("R ", 0) != 0) {
      t.run = 1;
      t.run_first = reading;
    } else if (t.run > 0 && *text == t.last_text) {
      ++t.run;
    } else {
      t.last_text = std::string(*text);
      t.key = place(t, *text, kernel_thread);
      t.run = 1;
      t.run_first = reading;
    }
    t.last_reading = reading;
    if (t.run == 1) t.bin = &t.bins[t.key];  // std::map nodes stay put
    ++t.bin->count;
    t.bin->longest_s = std::max(t.bin->longest_s, times[reading] - times[t.run_first]);
  }

  const ThreadsOptions& o_;
};

std::string fmt_ms(double s) {
  if (s >= 10) return fmt::format("{:.1f} s", s);
  if (s >= 1) return fmt::format("{:.2f} s", s);
  return fmt::format("{:.1f} ms", s * 1e3);
}

}  // namespace

std::string describe_syscall(const SyscallSample& s, const IoctlTable& table,
                             const std::function<std::string(long fd)>& fd_path) {
  if (s.kind == SyscallSample::Kind::running) return "running";
  if (s.kind == SyscallSample::Kind::outside_syscall)
    return fmt::format("in the kernel, not in a system call (a fault or a stop) pc={:#x}", s.pc);
  const std::string_view name = syscall_name(s.nr);
  const unsigned fds = syscall_fd_arguments(name);
  std::string out = name.empty() ? fmt::format("syscall_{}(", s.nr) : std::string(name) + "(";
  std::vector<std::string> paths(6);
  for (int i = 0; i < 6; ++i) {
    if (i > 0) out += ", ";
    if (fds & (1u << i)) {
      const auto fd = static_cast<std::int32_t>(s.args[i]);  // an int in a 64-bit register
      if (fd == -100) {
        out += "AT_FDCWD";
        continue;
      }
      paths[i] = fd >= 0 ? fd_path(fd) : "";
      out += paths[i].empty() ? fmt::format("{}", fd) : fmt::format("{}<{}>", fd, paths[i]);
    } else {
      out += fmt::format("{:#x}", s.args[i]);
    }
  }
  out += ")";
  if (name == "ioctl") out += " request=" + describe_ioctl(table, s.args[1], paths[0]);
  if (name == "futex") out += " op=" + futex_op(s.args[1]);
  return out;
}

namespace {

// Says each --pid that is not (or no longer) a live process, never skipping
// one silently; true when there was one.
bool report_missing_pids(const std::vector<pid_t>& pids, const std::vector<ProcessInfo>& found, std::ostream& err) {
  bool missing = false;
  for (pid_t pid : pids)
    if (std::none_of(found.begin(), found.end(), [pid](const ProcessInfo& p) { return p.pid == pid; })) {
      err << fmt::format("extmem threads: pid {}: no such process, or it has exited (or does not match --comm/--cmdline)\n", pid);
      missing = true;
    }
  return missing;
}

// How many threads may be sampled: two /proc files stay open per sampled
// thread, so keep within RLIMIT_NOFILE, with room for the files read in passing.
std::size_t sampled_threads_budget(std::size_t max_threads) {
  std::size_t budget = max_threads;
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    budget = std::min<std::size_t>(budget, nofile.rlim_cur > 34 ? (nofile.rlim_cur - 32) / 2 : 1);
  return budget;
}

std::vector<Process> watched_processes(std::vector<ProcessInfo>& found, Sampler& sampler, std::size_t budget) {
  std::vector<Process> procs;
  for (ProcessInfo& info : found) {
    Process p;
    p.info = std::move(info);
    p.kernel_thread = is_kernel_thread(p.info.pid);
    clockid_t clock{};
    if (::clock_getcpuclockid(p.info.pid, &clock) == 0) p.cpu_clock = clock;
    sampler.add_threads(p, budget);
    procs.push_back(std::move(p));
  }
  return procs;
}

// First gate: the process's total CPU time (one clock_gettime, no /proc
// file). Unchanged means no thread of it ran since the last reading, so
// none can have moved; only a thread woken but not yet on a CPU is then
// still shown where it waited.
bool ran_no_thread(Process& p) {
  bool idle = false;
  if (p.cpu_clock) {
    timespec cpu{};
    if (::clock_gettime(*p.cpu_clock, &cpu) == 0) {
      const std::int64_t ns = static_cast<std::int64_t>(cpu.tv_sec) * 1000000000LL + cpu.tv_nsec;
      idle = ns == p.last_cpu_ns;
      p.last_cpu_ns = ns;
    }
  }
  return idle;
}

// Reads every thread every period until the window ends, every process has
// ended or `stop` is set; returns the time of each reading (seconds from the first).
std::vector<double> read_threads_until_done(const ThreadsOptions& o, Sampler& sampler, std::vector<Process>& procs,
                                            std::size_t budget, const std::atomic<bool>* stop) {
  // Readings on an absolute schedule, so the period does not drift by the cost of a reading.
  std::vector<double> times;
  const auto start = Clock::now();
  const double window_s = std::chrono::duration<double>(o.window).count();
  timespec next{};
  ::clock_gettime(CLOCK_MONOTONIC, &next);
  const auto rescan_every = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::chrono::milliseconds(100) / o.period));
  for (std::uint64_t i = 0;; ++i) {
    if (stop != nullptr && stop->load()) break;
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    bool any_alive = false;
    for (Process& p : procs) {
      if (i > 0 && i % rescan_every == 0 && !p.ended) sampler.add_threads(p, budget);
      if (p.ended) continue;
      const bool idle = ran_no_thread(p);
      for (Thread& t : p.threads)
        if (!(idle && Sampler::repeat(t, times))) sampler.read_thread(t, times, p.kernel_thread);
      const bool alive = std::any_of(p.threads.begin(), p.threads.end(), [](const Thread& t) { return !t.exited; });
      if (!alive) p.ended = true;
      any_alive = any_alive || !p.ended;
    }
    if (!any_alive) break;
    if (times.back() >= window_s) break;
    detail::advance_sample_time(next, o.period);
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR)
      if (stop != nullptr && stop->load()) break;
  }
  return times;
}

// The exit status of the run: the most specific outcome wins, a vanished
// process, then a denial, then a failure, then a flag.
struct ThreadsOutcome {
  int code = kExitOk;
  void raise(int c) {
    const auto rank = [](int x) {
      return x == kExitNoProcess ? 4 : x == kExitPermission ? 3 : x == kExitFailed ? 2 : x == kExitTracerFlagged ? 1 : 0;
    };
    if (rank(c) > rank(code)) code = c;
  }
};

// One thread's row: name, state, how long it was seen where it was last, and
// that place; its tracer, if any, below it (a flagged one into `findings`).
// Returns whether its reads were denied.
bool print_thread_row(const Thread& t, const std::vector<double>& times, std::ostream& out, ThreadsOutcome& outcome,
                      std::vector<detail::TracerFinding>& findings) {
  auto st_text = detail::read_small_file(fmt::format("/proc/{}/task/{}/status", t.pid, t.tid));
  std::optional<TaskStatus> st;
  if (st_text) {
    auto parsed = parse_task_status(*st_text);
    if (parsed) st = *parsed;
  }
  const std::string name = st ? st->name : t.first_status ? t.first_status->name : "?";
  const char state = st ? st->state : '-';
  std::string seen = "-", where;
  if (t.denied) {
    where = fmt::format("denied: {}", t.denied->message());
  } else if (t.failed && t.readings == 0) {
    where = fmt::format("unreadable: {}", t.failed->message());
    outcome.raise(kExitFailed);
  } else if (t.readings == 0) {
    where = t.exited ? "exited before the first reading" : "not read";
  } else {
    const double span = times[t.last_reading] - times[t.run_first];
    seen = t.run_first == 0 && t.last_reading + 1 == times.size() ? fmt::format(">={}", fmt_ms(span)) : fmt_ms(span);
    where = t.key.size() > 2 && t.key[1] == ' ' ? t.key.substr(2) : t.key;  // the state is its own column
    if (t.exited) where += fmt::format("  [exited after {}]", fmt_ms(times[t.last_reading]));
    // Same context-switch counts at the end as at the start: it never ran while watched.
    if (!t.exited && st && t.first_status && t.run_first == 0 && times.size() > 1 &&
        st->voluntary_switches == t.first_status->voluntary_switches &&
        st->nonvoluntary_switches == t.first_status->nonvoluntary_switches)
      where += "  [not woken while watched]";
  }
  out << fmt::format("  {:>7} {:<16} {:<2} {:<10} {}\n", t.tid, name, state, seen, where);
  if (st && st->tracer_pid != 0) {
    detail::TracerFinding f = detail::examine_tracee(*st);
    out << fmt::format("          traced by {} ({}, state {} {}{})\n", f.tracer,
                       f.tracer_gone ? "gone" : f.tracer_status.name, f.tracer_gone ? '-' : f.tracer_status.state,
                       f.tracer_gone ? "" : describe_state(f.tracer_status.state),
                       f.tracer_wchan.empty() ? "" : ", wchan " + f.tracer_wchan);
    if (!f.flags.empty()) findings.push_back(std::move(f));
  } else if (st && st->state == 'T') {
    out << fmt::format("          stopped by a signal, not traced: kill -CONT {} resumes it\n", t.pid);
  }
  return t.denied.has_value();
}

// --histogram: where each thread was over the readings, its --top places.
void print_thread_histograms(const Process& p, std::size_t readings, std::size_t top, std::ostream& out) {
  out << fmt::format("  where each thread was over {} readings (share of its readings; longest stay: first to last reading of a run):\n",
                     readings);
  for (const Thread& t : p.threads) {
    if (t.readings == 0) continue;
    std::vector<std::pair<std::string, Bin>> rows(t.bins.begin(), t.bins.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
    out << fmt::format("  tid {}: {} place{} in {} readings\n", t.tid, rows.size(), rows.size() == 1 ? "" : "s", t.readings);
    for (std::size_t i = 0; i < rows.size() && i < top; ++i)
      out << fmt::format("    {:>6.1f}% {:>8}  longest {:>10}  {}\n", 100.0 * rows[i].second.count / t.readings,
                         rows[i].second.count, fmt_ms(rows[i].second.longest_s),
                         rows[i].first);
    if (rows.size() > top) out << fmt::format("    ... {} more places (--top)\n", rows.size() - top);
  }
}

// One process's report: its header, a row per thread, the histograms, the
// tracer flags and whether it ended.
void print_process_report(const ThreadsOptions& o, const Process& p, const std::vector<double>& times,
                          std::ostream& out, ThreadsOutcome& outcome) {
  const detail::SampleGaps gaps = detail::sample_gaps(times);
  const double watched = times.empty() ? 0 : times.back();
  out << fmt::format("pid {} ({}): {} thread{}, watched {}: {} reading{} every {} (achieved: median {}, longest gap {})\n",
                     p.info.pid, p.info.comm, p.threads.size(), p.threads.size() == 1 ? "" : "s", fmt_ms(watched),
                     times.size(), times.size() == 1 ? "" : "s", format_duration(o.period), fmt_ms(gaps.median),
                     fmt_ms(gaps.longest));
  if (!p.not_sampled.empty())
    out << fmt::format("  {} more threads not sampled (--max-threads={}, or two open files per thread within RLIMIT_NOFILE)\n",
                       p.not_sampled.size(), o.max_threads);
  out << fmt::format("  {:>7} {:<16} {:<2} {:<10} {}\n", "TID", "NAME", "ST", "SEEN", "WHERE");
  bool any_denied = false;
  std::vector<detail::TracerFinding> findings;
  for (const Thread& t : p.threads)
    if (print_thread_row(t, times, out, outcome, findings)) any_denied = true;
  if (any_denied) {
    out << "  denied: " << detail::denial_reason(p.info.pid) << '\n';
    outcome.raise(kExitPermission);
  }
  if (o.histogram) print_thread_histograms(p, times.size(), o.top, out);
  for (const detail::TracerFinding& f : findings) {
    for (const std::string& flag : f.flags) out << "  FLAG " << flag << '\n';
    for (const std::string& step : f.steps) out << "    fix: " << step << '\n';
    outcome.raise(kExitTracerFlagged);
  }
  if (p.ended) {
    out << fmt::format("  process {} ended while being sampled\n", p.info.pid);
    outcome.raise(kExitNoProcess);
  }
}

}  // namespace

int run_threads(const ThreadsOptions& o, std::ostream& out, std::ostream& err, const std::atomic<bool>* stop) {
  auto found = find_processes(o.processes);
  if (!found) {
    err << "extmem threads: " << found.error().message() << '\n';
    return kExitFailed;
  }
  const bool missing = report_missing_pids(o.processes.pids, *found, err);
  if (found->empty()) {
    if (o.processes.pids.empty()) err << "extmem threads: no process matches --comm/--cmdline\n";
    return kExitNoProcess;
  }
  Sampler sampler(o);
  const std::size_t budget = sampled_threads_budget(o.max_threads);
  std::vector<Process> procs = watched_processes(*found, sampler, budget);
  const std::vector<double> times = read_threads_until_done(o, sampler, procs, budget, stop);

  ThreadsOutcome outcome;
  for (const Process& p : procs) print_process_report(o, p, times, out, outcome);
  out << fmt::format(
      "not stopped, not attached: read through /proc/PID/task/TID/syscall; a place held for less than the period ({}) "
      "between two readings is not seen; a stay ends when the thread is seen to have run (schedstat), so waking and "
      "waiting again in the same call counts as a new stay\n",
      format_duration(o.period));
  int code = outcome.code;
  if (missing && code != kExitNoProcess) code = kExitNoProcess;
  if (code == kExitNoProcess && !missing) err << "extmem threads: a process ended while being sampled (ESRCH)\n";
  if (code == kExitPermission) err << "extmem threads: permission denied reading some threads (EACCES/EPERM); see \"denied:\"\n";
  if (code == kExitTracerFlagged) err << "extmem threads: a tracer condition is flagged (FLAG lines)\n";
  return code;
}

}  // namespace extmem::memtools
