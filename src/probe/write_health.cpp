// The health section of the text output and the node-problem-detector line.
#include <ostream>

#include <fmt/format.h>

#include "extmem/probe/fleet_write.h"

namespace extmem::probe {
namespace {

// At most `max` bytes, never ending inside a UTF-8 sequence (NPD cuts bytes, a viewer wants characters).
std::string cut_to_bytes(std::string s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

std::string single_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

void write_health(std::ostream& out, const Health& h) {
  out << fmt::format("\n== health: {} ({} required row{}, {} problem{})\n", h.ok ? "OK" : "NOT OK", h.required.size(),
                     h.required.size() == 1 ? "" : "s", h.problems.size(), h.problems.size() == 1 ? "" : "s");
  for (const HealthProblem& p : h.problems) {
    out << fmt::format("problem {} {} {} {}{}{}{}\n", p.row, p.status, p.code->id, p.code->name,
                       p.expected.empty() ? "" : " expected " + p.expected, p.step.empty() ? "" : " at " + p.step,
                       p.why.empty() ? "" : " why: " + single_line(p.why));
  }
}

std::string npd_line(const Health& h, std::size_t max_bytes) {
  if (h.ok)
    return cut_to_bytes(h.required.empty() ? std::string("OK: no row failed")
                                  : fmt::format("OK: {} required row{} OK", h.required.size(),
                                                h.required.size() == 1 ? "" : "s"),
               max_bytes);
  const HealthProblem& p = h.problems.front();
  return cut_to_bytes(single_line(fmt::format("{} {} {}{}", p.row, p.status, p.code->id, p.step.empty() ? "" : " at " + p.step)),
             max_bytes);
}

std::string npd_unknown_line(const std::string& why, std::size_t max_bytes) {
  return cut_to_bytes(single_line("unknown: " + why), max_bytes);
}

}  // namespace extmem::probe
