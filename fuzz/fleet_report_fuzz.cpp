// Fuzzes `extmem report`'s reader of probe documents: any input either parses
// into a run or is rejected with a message; a parsed run renders as Markdown
// and HTML without crashing, also as one node's repeated runs against a
// baseline (the fleet view: history, baseline marks, node ages), and the HTML
// never carries a raw '<' from the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "extmem/report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto run = extmem::report::parse_run("fuzz.json", text);
  if (!run) {
    if (run.error().detail.empty()) __builtin_trap();  // a rejection always says why
    return 0;
  }
  static const std::vector<extmem::probe::Expectation> baseline = {
      {"T1-opaque-fd", extmem::RowStatus::ok, "", "", 1}, {"T1-dma-buf", extmem::RowStatus::unsupported, "", "llvmpipe", 2}};
  extmem::report::FleetOptions fleet;
  fleet.baseline = &baseline;
  fleet.stale_after_s = 1;
  // The same document as a node's two runs, and as a second node's one.
  extmem::report::Run other = *run;
  other.node += "-other";
  std::string md = extmem::report::markdown({*run, *run, other}, fleet);
  std::string page = extmem::report::html({*run, other}, fleet);
  if (md.empty() || page.find("</html>") == std::string::npos) __builtin_trap();
  for (const auto& [row, cell] : run->rows)
    if (row.find('<') != std::string::npos && page.find(row) != std::string::npos) __builtin_trap();
  if (run->node.find('<') != std::string::npos && page.find(run->node) != std::string::npos) __builtin_trap();
  return 0;
}
