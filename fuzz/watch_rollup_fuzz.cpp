// Fuzzes the smaps_rollup Pss reader and the maps census (which classifies
// every line through os::parse_maps_line): the census must count every line
// exactly once, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/watch/mapping_classes.h"
#include "extmem/watch/procfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto pss = extmem::watch::parse_pss_total(text);
  if (pss && text.find("Pss:") == std::string_view::npos) __builtin_trap();
  const extmem::watch::MapCensus c = extmem::watch::census_of(text);
  std::uint64_t sum = 0;
  for (const auto& [name, n] : c.classes) {
    if (n == 0 || name.empty()) __builtin_trap();
    sum += n;
  }
  if (sum != c.total || c.total != extmem::watch::count_lines(text)) __builtin_trap();
  return 0;
}
