// Fuzzes the `diff --range` parser: accepted lists hold non-empty ranges that
// do not wrap past 2^64; refused ones point inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/memtools/diff_command.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  extmem::memtools::SyntaxError syntax;
  auto ranges = extmem::memtools::parse_ranges(text, &syntax);
  if (!ranges) {
    if (syntax.column > text.size() || syntax.input != text) __builtin_trap();
    (void)syntax.render("--range");
    return 0;
  }
  if (ranges->empty()) __builtin_trap();
  for (const auto& [address, bytes] : *ranges) {
    if (bytes == 0) __builtin_trap();
    if (address + (bytes - 1) < address) __builtin_trap();
  }
  return 0;
}
