#include "probe/parent/junit.h"

#include <fmt/format.h>

#include "extmem/probe/failure_codes.h"
#include "probe/parent/measure_row.h"
#include "core/xml_text.h"

namespace extmem::probe {

std::string junit_xml(const std::vector<RowResult>& rows, const std::string& device) {
  int failures = 0, skipped = 0;
  double seconds = 0;
  for (const RowResult& r : rows) {
    seconds += r.seconds;
    if (is_failure(r.verdict.status)) ++failures;
    if (did_not_run(r.verdict.status)) ++skipped;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"extmem probe\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3f}\">\n",
                   rows.size(), failures, skipped, seconds);
  x += fmt::format("  <testsuite name=\"extmem-probe\" hostname=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
                   "skipped=\"{}\" time=\"{:.3f}\">\n",
                   xml_text(device), rows.size(), failures, skipped, seconds);
  for (const RowResult& r : rows) {
    const std::string status = to_string(r.verdict.status);
    x += fmt::format("    <testcase classname=\"extmem.probe\" name=\"{}\" time=\"{:.3f}\">\n", xml_text(r.row), r.seconds);
    if (is_failure(r.verdict.status)) {
      x += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", status, xml_text(r.verdict.why),
                       xml_text(result_line(r)));
    } else if (did_not_run(r.verdict.status)) {
      x += fmt::format("      <skipped message=\"{}: {}\"/>\n", status, xml_text(r.verdict.why));
    }
    std::string out = result_line(r);
    if (r.measure) out += "\n" + measure_line(*r.measure);
    // The code as the text output prints it: testcase <properties> are outside the subset CI tools share.
    if (const FailureCode* c = failure_code(r)) out += fmt::format("\n  code: {} {} {}", c->id, to_string(c->klass), c->name);
    x += fmt::format("      <system-out>{}</system-out>\n", xml_text(out));
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace extmem::probe
