#include "probe/junit.h"

#include <fmt/format.h>

#include "probe/measure_row.h"

namespace extmem::probe {
namespace {

// Escapes for attribute and text content. Bytes XML 1.0 does not allow
// (C0 controls other than tab, newline, carriage return) become U+FFFD.
std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += "\xEF\xBF\xBD";
        else out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string junit_xml(const std::vector<RowResult>& rows, const std::string& device) {
  int failures = 0, skipped = 0;
  double seconds = 0;
  for (const RowResult& r : rows) {
    seconds += r.seconds;
    if (r.verdict.status == RowStatus::fail || r.verdict.status == RowStatus::partial) ++failures;
    if (r.verdict.status == RowStatus::skip || r.verdict.status == RowStatus::unsupported) ++skipped;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"extmem probe\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3f}\">\n",
                   rows.size(), failures, skipped, seconds);
  x += fmt::format("  <testsuite name=\"extmem-probe\" hostname=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
                   "skipped=\"{}\" time=\"{:.3f}\">\n",
                   esc(device), rows.size(), failures, skipped, seconds);
  for (const RowResult& r : rows) {
    const std::string status = to_string(r.verdict.status);
    x += fmt::format("    <testcase classname=\"extmem.probe\" name=\"{}\" time=\"{:.3f}\">\n", esc(r.row), r.seconds);
    if (r.verdict.status == RowStatus::fail || r.verdict.status == RowStatus::partial) {
      x += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", status, esc(r.verdict.why),
                       esc(result_line(r)));
    } else if (r.verdict.status == RowStatus::skip || r.verdict.status == RowStatus::unsupported) {
      x += fmt::format("      <skipped message=\"{}: {}\"/>\n", status, esc(r.verdict.why));
    }
    std::string out = result_line(r);
    if (std::string m = measure_line(r.measure); !m.empty()) out += "\n" + m;
    x += fmt::format("      <system-out>{}</system-out>\n", esc(out));
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace extmem::probe
