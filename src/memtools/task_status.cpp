#include "extmem/memtools/task_status.h"

#include <charconv>
#include <limits>

#include <fmt/format.h>

namespace extmem::memtools {
namespace {

template <typename T>
bool parse_decimal(std::string_view s, T& out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  const std::size_t end = s.find_first_of(" \t");
  s = s.substr(0, end);
  if (s.empty() || s.front() == '-' || s.front() == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Result<TaskStatus> parse_task_status(std::string_view text) {
  TaskStatus t;
  bool have_pid = false;
  const auto bad = [](std::string_view line) {
    return Error{"parse status", ErrorKind::invalid_argument, {},
                 fmt::format("malformed line \"{}\"", line.substr(0, 80))};
  };
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    bool ok = true;
    if (key == "Name") {
      t.name = std::string(value);
    } else if (key == "State") {
      ok = !value.empty();
      if (ok) t.state = value.front();
    } else if (key == "Tgid") {
      ok = parse_decimal(value, t.tgid);
    } else if (key == "Pid") {
      ok = parse_decimal(value, t.pid) && t.pid > 0;
      have_pid = ok;
    } else if (key == "PPid") {
      ok = parse_decimal(value, t.ppid);
    } else if (key == "TracerPid") {
      ok = parse_decimal(value, t.tracer_pid);
    } else if (key == "Uid") {
      ok = parse_decimal(value, t.uid);
    } else if (key == "voluntary_ctxt_switches") {
      ok = parse_decimal(value, t.voluntary_switches);
    } else if (key == "nonvoluntary_ctxt_switches") {
      ok = parse_decimal(value, t.nonvoluntary_switches);
    }
    if (!ok) return bad(line);
  }
  if (!have_pid)
    return Error{"parse status", ErrorKind::invalid_argument, {}, "no \"Pid:\" line"};
  return t;
}

std::string_view describe_state(char state) {
  switch (state) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk-sleep";
    case 'T': return "stopped";
    case 't': return "tracing-stop";
    case 'Z': return "zombie";
    case 'X': return "dead";
    case 'I': return "idle";
    case 'P': return "parked";
    default: return "?";
  }
}

}  // namespace extmem::memtools
