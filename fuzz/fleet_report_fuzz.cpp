// Fuzzes `extmem report`'s reader of probe documents: any input either parses
// into a run or is rejected with a message; a parsed run renders as Markdown
// and HTML without crashing, and the HTML never carries a raw '<' from the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "report/fleet.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto run = extmem::report::parse_run("fuzz.json", text);
  if (!run) {
    if (run.error().detail.empty()) __builtin_trap();  // a rejection always says why
    return 0;
  }
  std::string md = extmem::report::markdown({*run, *run});
  std::string page = extmem::report::html({*run});
  if (md.empty() || page.find("</html>") == std::string::npos) __builtin_trap();
  for (const auto& [row, cell] : run->rows)
    if (row.find('<') != std::string::npos && page.find(row) != std::string::npos) __builtin_trap();
  return 0;
}
