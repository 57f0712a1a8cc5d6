// Fuzzes the `scan --entropy=BITS[/BLOCK]` parser: an accepted query has a
// block of 8 to 64K bytes and a threshold a block of that size can reach;
// refused ones point inside the input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/memtools/block_scan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  extmem::memtools::SyntaxError syntax;
  auto q = extmem::memtools::parse_entropy(text, &syntax);
  if (!q) {
    if (syntax.column > text.size() || syntax.input != text) __builtin_trap();
    (void)syntax.render("--entropy");
    return 0;
  }
  if (q->block < 8 || q->block > 65536) __builtin_trap();
  const double reachable = std::log2(static_cast<double>(q->block < 256 ? q->block : 256));
  if (!(q->bits > 0) || q->bits > reachable + 1e-9) __builtin_trap();
  return 0;
}
