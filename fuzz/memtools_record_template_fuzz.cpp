// Fuzzes the --record template parser (and the --hex pattern parser on the same
// text): accepted templates have an "=" anchor and field extents around it, and
// match/decode a record of exactly that extent; refused ones point inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "extmem/memtools/scan_query.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace extmem::memtools;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  SyntaxError syntax;
  auto t = RecordTemplate::parse(text, ByteOrder::little, &syntax);
  if (t) {
    if (t->fields().empty() || t->anchor().op != CompareOp::eq || t->anchor().offset != 0) __builtin_trap();
    if (t->min_offset() > 0 || t->max_end() < static_cast<std::int64_t>(t->anchor().width)) __builtin_trap();
    // A record of exactly the template's extent, its anchor holding the anchor value.
    std::vector<std::uint8_t> record(static_cast<std::size_t>(t->max_end() - t->min_offset()), 0);
    const std::size_t anchor = static_cast<std::size_t>(-t->min_offset());
    const auto bytes = t->anchor_bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i) record[anchor + i] = bytes[i];
    (void)t->matches(record.data() + anchor);
    if (t->decode(record.data() + anchor).size() != t->fields().size()) __builtin_trap();
  } else if (syntax.column > text.size() || syntax.input != text || syntax.render("--record").find('^') == std::string::npos) {
    __builtin_trap();
  }
  SyntaxError hex_syntax;
  auto p = parse_hex_pattern(text, &hex_syntax);
  if (p) {
    if (p->empty() || p->size() > 4096 || p->size() > size) __builtin_trap();
  } else if (hex_syntax.column > text.size() || hex_syntax.input != text) {
    __builtin_trap();
  }
  return 0;
}
