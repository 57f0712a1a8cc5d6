// The --verdict-file line: what a launcher without a shell reads back at the end
// of a run (docs/probe.md, "Launch without a shell").
#include <fmt/format.h>

#include "extmem/probe/probe.h"
#include "extmem/probe/write.h"

namespace extmem::probe {

std::string verdict_line(int exit_code, const std::vector<RowResult>& rows, std::string_view why) {
  const char* overall = exit_code == kExitOk       ? "PASS"
                        : exit_code == kExitFailed ? "FAIL"
                        : exit_code == kExitUsage  ? "USAGE"
                                                   : "ERROR";
  const std::array<int, 5> c = count_statuses(rows);
  std::string line = fmt::format("VERDICT {} exit={} rows={} OK={} PARTIAL={} FAIL={} UNSUPPORTED={} SKIP={}", overall,
                                 exit_code, rows.size(), c[0], c[1], c[2], c[3], c[4]);
  if (!why.empty()) {
    std::string one_line(why);
    for (char& ch : one_line)
      if (ch == '\n' || ch == '\r') ch = ' ';
    line += " why: " + one_line;
  }
  return line + "\n";
}

}  // namespace extmem::probe
