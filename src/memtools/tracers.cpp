// `extmem threads --tracers`: every traced thread on the machine.
#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "extmem/memtools/commands.h"
#include "extmem/memtools/threads.h"
#include "memtools/task_files.h"
#include "memtools/tracer_check.h"

namespace extmem::memtools {
namespace {

std::vector<pid_t> numeric_entries(const std::string& path) {
  std::vector<pid_t> out;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return out;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long n = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && n > 0) out.push_back(static_cast<pid_t>(n));
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int run_tracers(const TracersOptions& o, std::ostream& out, std::ostream& err) {
  DIR* probe = ::opendir("/proc");
  if (probe == nullptr) {
    err << "extmem threads --tracers: " << os_error("open /proc", errno).message() << '\n';
    return kExitFailed;
  }
  ::closedir(probe);
  std::size_t processes = 0, threads = 0;
  std::vector<detail::TracerFinding> traced;
  for (pid_t pid : numeric_entries("/proc")) {
    const std::vector<pid_t> tids = numeric_entries(fmt::format("/proc/{}/task", pid));
    if (tids.empty()) continue;  // ended meanwhile
    ++processes;
    for (pid_t tid : tids) {
      auto text = detail::read_small_file(fmt::format("/proc/{}/task/{}/status", pid, tid));
      if (!text) continue;  // ended meanwhile
      auto st = parse_task_status(*text);
      if (!st) continue;
      ++threads;
      if (st->tracer_pid != 0) traced.push_back(detail::examine_tracee(*st));
    }
  }
  std::size_t flagged = 0;
  out << fmt::format("tracers: {} traced thread{} (read the status of {} threads in {} processes)\n", traced.size(),
                     traced.size() == 1 ? "" : "s", threads, processes);
  for (const detail::TracerFinding& f : traced) {
    const TaskStatus& t = f.tracee;
    out << fmt::format("  tracee {} (pid {}, {}) state {} {}; tracer {}", t.pid, t.tgid, t.name, t.state,
                       describe_state(t.state), f.tracer);
    if (f.tracer_gone)
      out << " gone\n";
    else
      out << fmt::format(" (pid {}, {}) state {} {}{}\n", f.tracer_status.tgid, f.tracer_status.name,
                         f.tracer_status.state, describe_state(f.tracer_status.state),
                         f.tracer_wchan.empty() ? "" : ", wchan " + f.tracer_wchan);
    for (const std::string& flag : f.flags) out << "    FLAG " << flag << '\n';
    for (const std::string& step : f.steps) out << "      fix: " << step << '\n';
    if (!f.flags.empty()) ++flagged;
  }
  if (flagged > 0) {
    out << fmt::format("{} flagged condition{}\n", flagged, flagged == 1 ? "" : "s");
    return kExitTracerFlagged;
  }
  if (o.expect_none && !traced.empty()) {
    out << "expected no traced thread (--expect-none): TracerPid is not 0 everywhere\n";
    return kExitTracerFlagged;
  }
  return kExitOk;
}

}  // namespace extmem::memtools
