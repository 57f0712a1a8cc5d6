#include "extmem/memtools/processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "memtools/scan.h"
#include "memtools/task_files.h"

namespace extmem::memtools {

Result<pid_t> parse_pid(std::string_view text, SyntaxError* syntax) {
  constexpr std::string_view kAccepted = "a process id: a decimal number from 1 to 2147483647";
  detail::ScanFailure failure;
  if (text.substr(0, 2) == "0x" || text.substr(0, 2) == "0X")
    return detail::syntax_failure(syntax, "pid", text, 1, "process ids are decimal", kAccepted);
  auto n = detail::scan_number(text, 0, text.size(), NumberStyle::value, failure);
  if (!n) return detail::syntax_failure(syntax, "pid", text, failure.column, failure.problem, kAccepted);
  if (*n == 0 || *n > static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max()))
    return detail::syntax_failure(syntax, "pid", text, 0, fmt::format("{} is not a process id", *n), kAccepted);
  return static_cast<pid_t>(*n);
}

namespace {

// The whole of a small /proc file through read(2). A process that goes away
// makes these reads fail (ESRCH), which iostreams would turn into exceptions.
Result<std::string> read_proc_file(const std::string& path) { return detail::read_small_file(path); }

// The state letter of /proc/PID/stat, "PID (COMM) STATE ...": COMM may hold
// spaces and parentheses, so it is read after the last ')'.
Result<char> read_state(pid_t pid) {
  auto stat = read_proc_file(fmt::format("/proc/{}/stat", pid));
  if (!stat) return std::move(stat).error();
  const std::size_t paren = stat->rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat->size()) return '?';
  return (*stat)[paren + 2];
}

}  // namespace

Result<ProcessInfo> read_process(pid_t pid) {
  ProcessInfo p;
  p.pid = pid;
  auto comm = read_proc_file(fmt::format("/proc/{}/comm", pid));
  if (!comm) return std::move(comm).error();
  p.comm = std::move(*comm);
  if (!p.comm.empty() && p.comm.back() == '\n') p.comm.pop_back();
  auto cmdline = read_proc_file(fmt::format("/proc/{}/cmdline", pid));
  if (!cmdline) return std::move(cmdline).error();
  p.cmdline = std::move(*cmdline);
  while (!p.cmdline.empty() && p.cmdline.back() == '\0') p.cmdline.pop_back();
  std::replace(p.cmdline.begin(), p.cmdline.end(), '\0', ' ');
  auto state = read_state(pid);
  if (!state) return std::move(state).error();
  p.state = *state;
  return p;
}

bool process_running(pid_t pid) {
  auto state = read_state(pid);
  return state && *state != 'Z' && *state != 'X';
}

Result<std::vector<os::MapEntry>> read_live_maps(pid_t pid) {
  auto maps = os::read_maps(pid);
  if (maps && maps->empty() && !process_running(pid))
    return os_error("read /proc/" + std::to_string(pid) + "/maps", ESRCH,
                    "the process has exited (a zombie not yet reaped by its parent: no memory left)");
  return maps;
}

bool process_gone(const Error& error) {
  return error.is_errno(ENOENT) || error.is_errno(ESRCH);
}

bool matches(const ProcessFilter& filter, const ProcessInfo& process) {
  if (!filter.pids.empty() && std::find(filter.pids.begin(), filter.pids.end(), process.pid) == filter.pids.end())
    return false;
  if (filter.comm && process.comm != std::string_view(*filter.comm).substr(0, kMaxComm)) return false;
  if (filter.cmdline && !filter.cmdline->search(process.cmdline)) return false;
  return true;
}

Result<std::vector<ProcessInfo>> find_processes(const ProcessFilter& filter) {
  const pid_t self = ::getpid();
  std::vector<pid_t> pids;
  if (!filter.pids.empty()) {
    pids = filter.pids;  // no need to list /proc
  } else {
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) return os_error("open /proc", errno);
    while (const dirent* e = ::readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0' && pid > 0) pids.push_back(static_cast<pid_t>(pid));
    }
    ::closedir(dir);
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  std::vector<ProcessInfo> out;
  for (pid_t pid : pids) {
    if (pid == self) continue;
    auto info = read_process(pid);
    if (!info || info->state == 'Z' || info->state == 'X') continue;  // ended (meanwhile), or not a process
    if (matches(filter, *info)) out.push_back(std::move(*info));
  }
  return out;
}

}  // namespace extmem::memtools
