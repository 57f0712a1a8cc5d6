// Fuzzes the --ram-map parser: accepted maps are sorted, non-empty ranges that
// overlap in neither space and translate both ways; refused ones point inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/memtools/ram_map.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  extmem::memtools::SyntaxError syntax;
  auto map = extmem::memtools::RamMap::parse(text, &syntax);
  if (!map) {
    if (syntax.column > text.size() || syntax.input != text) __builtin_trap();
    (void)syntax.render("--ram-map");
    return 0;
  }
  const auto& ranges = map->ranges();
  if (ranges.empty()) __builtin_trap();
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    if (r.size == 0) __builtin_trap();
    if (i > 0 && ranges[i - 1].gpa + ranges[i - 1].size > r.gpa) __builtin_trap();  // sorted, disjoint
    const std::uint64_t last = r.gpa + (r.size - 1);
    if (map->to_file_offset(r.gpa) != r.file_offset) __builtin_trap();
    if (map->to_file_offset(last) != r.file_offset + (r.size - 1)) __builtin_trap();
    if (map->to_gpa(r.file_offset) != r.gpa) __builtin_trap();
  }
  return 0;
}
