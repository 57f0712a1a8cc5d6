#include "memtools/tracer_check.h"

#include <sched.h>
#include <sys/syscall.h>

#include <algorithm>

#include <fmt/format.h>

#include "extmem/memtools/syscall.h"
#include "memtools/task_files.h"

namespace extmem::memtools::detail {
namespace {

// /proc/TID works for any thread id (not only thread-group leaders).
Result<TaskStatus> read_status_of(pid_t tid) {
  auto text = read_small_file(fmt::format("/proc/{}/status", tid));
  if (!text) return std::move(text).error();
  return parse_task_status(*text);
}

// Whether thread `tid` is parked in vfork(): its wchan names the wait
// (kernel_clone, or wait_for_vfork_done where not inlined), or, where the
// wchan is hidden, its syscall file shows vfork or a clone with CLONE_VFORK
// (readable with the access a debugger would need).
bool in_vfork(pid_t tid, const std::string& wchan) {
  if (wchan == "kernel_clone" || wchan.find("vfork") != std::string::npos) return true;
  auto text = read_small_file(fmt::format("/proc/{}/syscall", tid));
  if (!text) return false;
  auto sc = parse_syscall_line(*text);
  if (!sc || sc->kind != SyscallSample::Kind::in_syscall) return false;
#ifdef SYS_vfork
  if (sc->nr == SYS_vfork) return true;
#endif
  return sc->nr == SYS_clone && (sc->args[0] & CLONE_VFORK) != 0;
}

// The children of thread `tid` as "PID PID …" ("" when none or unreadable).
std::string vfork_children(pid_t tid) {
  auto text = read_small_file(fmt::format("/proc/{}/task/{}/children", tid, tid));
  if (!text) return {};
  std::string s = std::move(*text);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

}  // namespace

std::string read_wchan(pid_t tid) {
  auto w = read_small_file(fmt::format("/proc/{}/wchan", tid));
  if (!w || *w == "0" || w->empty()) return {};
  std::string s = std::move(*w);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TracerFinding examine_tracee(const TaskStatus& tracee) {
  TracerFinding f;
  f.tracee = tracee;
  f.tracer = tracee.tracer_pid;
  auto st = read_status_of(f.tracer);
  f.tracer_gone = !st || st->state == 'Z' || st->state == 'X';
  if (st) f.tracer_status = *st;
  if (!f.tracer_gone) f.tracer_wchan = read_wchan(f.tracer);
  // Follow tracer -> its tracer -> ... ; back at the tracee means they wait on each other.
  if (!f.tracer_gone) {
    std::vector<pid_t> chain{f.tracer};
    pid_t next = f.tracer_status.tracer_pid;
    for (int i = 0; i < 16 && next != 0; ++i) {
      if (next == tracee.pid) {
        f.cycle = chain;
        break;
      }
      if (std::find(chain.begin(), chain.end(), next) != chain.end()) break;  // a cycle not through the tracee
      chain.push_back(next);
      auto s = read_status_of(next);
      next = s ? s->tracer_pid : 0;
    }
  }
  const pid_t tr = f.tracer;
  const pid_t te = tracee.pid;
  if (tracee.state == 't') {
    f.flags.push_back(fmt::format("tracee {} is stopped by its tracer {} (state t, tracing-stop): it runs again only when the tracer lets it", te, tr));
    f.steps.push_back(fmt::format("in the tracer, let it go: gdb `continue` or `detach`, strace Ctrl-C; or run the tracer's own detach"));
  }
  if (f.tracer_gone) {
    f.flags.push_back(fmt::format("tracer {} is gone (no such thread, or a zombie) while {} still names it", tr, te));
    f.steps.push_back(fmt::format("a zombie tracer is released when its parent reaps it: kill -CHLD {}'s parent, or end that parent (destructive)", tr));
  } else {
    const char s = f.tracer_status.state;
    const std::string where = f.tracer_wchan.empty() ? "" : fmt::format(" in {}", f.tracer_wchan);
    if (s == 'D') {
      // vfork() parks the parent in the kernel until the child execs or exits.
      const bool vfork_wait = in_vfork(tr, f.tracer_wchan);
      f.flags.push_back(fmt::format("tracer {} ({}) is blocked in uninterruptible sleep{}{}", tr, f.tracer_status.name,
                                    where, vfork_wait ? " (waiting for its vfork() child to exec or exit)" : ""));
      if (vfork_wait) {
        const std::string children = vfork_children(tr);
        f.steps.push_back(fmt::format("tracer {} resumes when its vfork child execs or exits: kill {} ends that child (destructive "
                                      "for the child only)",
                                      tr, children.empty() ? "the child (/proc/" + std::to_string(tr) + "/task/" +
                                                                 std::to_string(tr) + "/children)"
                                                           : children));
      }
      f.steps.push_back(fmt::format("no signal but SIGKILL reaches tracer {} before its kernel call returns (and only in a killable wait): "
                                    "look at where it waits with `extmem threads --pid={}`",
                                    tr, f.tracer_status.tgid));
    } else if (s == 'T') {
      f.flags.push_back(fmt::format("tracer {} ({}) is itself stopped (state T): it cannot resume or detach its tracee", tr, f.tracer_status.name));
      f.steps.push_back(fmt::format("kill -CONT {}  resumes the tracer so that it can continue or detach", f.tracer_status.tgid));
    } else if (s == 't') {
      f.flags.push_back(fmt::format("tracer {} ({}) is itself stopped by its own tracer {}", tr, f.tracer_status.name, f.tracer_status.tracer_pid));
      f.steps.push_back(fmt::format("release tracer {} first (see its own entry), then {}", tr, te));
    }
  }
  if (!f.cycle.empty()) {
    std::string chain = fmt::format("{}", te);
    for (pid_t p : f.cycle) chain += fmt::format(" <- {}", p);
    f.flags.push_back(fmt::format("mutual tracing: {} <- {} (each waits on the other)", chain, te));
    f.steps.push_back(fmt::format("only ending one of them breaks the cycle (destructive): kill -KILL {}", f.tracer_status.tgid));
  }
  if (!f.flags.empty() && !f.tracer_gone) {
    f.steps.push_back(fmt::format(
        "destructive: kill -KILL {} ends the tracer; the kernel then detaches {} (its work in progress is lost), and a tracee left "
        "stopped (state T) needs kill -CONT {}; a tracee stopped inside a driver call may keep a driver lock until it resumes",
        f.tracer_status.tgid, te, tracee.tgid));
  }
  return f;
}

}  // namespace extmem::memtools::detail
