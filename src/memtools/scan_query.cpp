#include "extmem/memtools/scan_query.h"

#include <algorithm>

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

constexpr std::size_t kMaxPattern = 4096;      // bytes of a --hex pattern
constexpr std::size_t kMaxFields = 64;         // fields of a record template
constexpr std::int64_t kMaxFieldOffset = 1 << 20;  // |offset| of a field, bytes

constexpr std::string_view kPatternGrammar =
    "pairs of hexadecimal digits, e.g. 6c696174, \"6c 69 61 74\", 6c:69:61:74 or 0x6c696174 (1 to 4096 bytes)";
constexpr std::string_view kTemplateGrammar =
    "FIELD[ FIELD...] with FIELD = NAME@OFFSET:TYPE[OP VALUE], e.g. \"va@-0x18:u64 marker@0:u32=0x7461696c\"; "
    "TYPE u8|u16|u32|u64 (suffix be|le for byte order), OP = == != < <= > >=; one field needs =VALUE (the anchor)";

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool separator(char c) { return c == ' ' || c == ',' || c == '\t'; }

}  // namespace

const char* to_string(ByteOrder order) noexcept { return order == ByteOrder::big ? "big" : "little"; }

Result<ByteOrder> parse_byte_order(std::string_view text, SyntaxError* syntax) {
  if (text == "little" || text == "le") return ByteOrder::little;
  if (text == "big" || text == "be") return ByteOrder::big;
  return detail::syntax_failure(syntax, "byte order", text, 0, fmt::format("unknown byte order \"{}\"", text),
                                "little (or le), big (or be)");
}

std::vector<std::uint8_t> encode_word(std::uint64_t value, unsigned width, ByteOrder order) {
  std::vector<std::uint8_t> out(width);
  for (unsigned i = 0; i < width; ++i) {
    const auto byte = static_cast<std::uint8_t>(value >> (8 * i));
    out[order == ByteOrder::little ? i : width - 1 - i] = byte;
  }
  return out;
}

std::uint64_t decode_word(const std::uint8_t* bytes, unsigned width, ByteOrder order) noexcept {
  std::uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) {
    const std::uint64_t byte = bytes[order == ByteOrder::little ? i : width - 1 - i];
    v |= byte << (8 * i);
  }
  return v;
}

Result<std::vector<std::uint8_t>> parse_hex_pattern(std::string_view text, SyntaxError* syntax) {
  auto fail = [&](std::size_t column, std::string problem) {
    return detail::syntax_failure(syntax, "pattern", text, column, std::move(problem), kPatternGrammar);
  };
  std::vector<std::uint8_t> out;
  std::size_t pos = 0;
  bool run_start = true;  // at the start of a run of digits (where "0x" may stand)
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == ' ' || c == ':') {
      if (pos == 0 || pos + 1 == text.size() || text[pos + 1] == ' ' || text[pos + 1] == ':')
        return fail(pos, fmt::format("unexpected {} (one separator between bytes)", detail::quote_char(text, pos)));
      ++pos;
      run_start = true;
      continue;
    }
    if (run_start && c == '0' && pos + 1 < text.size() && (text[pos + 1] == 'x' || text[pos + 1] == 'X')) {
      if (pos != 0) return fail(pos, "\"0x\" only at the start of the pattern");
      pos += 2;
      if (pos == text.size()) return fail(pos, "expected hexadecimal digits after \"0x\"");
      run_start = false;
      continue;
    }
    run_start = false;
    const int hi = hex_digit(c);
    if (hi < 0) return fail(pos, fmt::format("expected a hexadecimal digit, found {}", detail::quote_char(text, pos)));
    if (pos + 1 >= text.size() || text[pos + 1] == ' ' || text[pos + 1] == ':')
      return fail(pos, "a lone hexadecimal digit: bytes are written as two digits");
    const int lo = hex_digit(text[pos + 1]);
    if (lo < 0)
      return fail(pos + 1, fmt::format("expected a hexadecimal digit, found {}", detail::quote_char(text, pos + 1)));
    if (out.size() == kMaxPattern) return fail(pos, fmt::format("the pattern is longer than {} bytes", kMaxPattern));
    out.push_back(static_cast<std::uint8_t>(hi * 16 + lo));
    pos += 2;
  }
  if (out.empty()) return fail(0, "empty pattern");
  return out;
}

namespace {

// Each parse_field_* returns nothing, or where the field's text is wrong and why.
using FieldProblem = detail::ScanFailure;

// A field's "@OFFSET" at `pos` (moved past it) into f.offset.
std::optional<FieldProblem> parse_field_offset(std::string_view text, std::size_t& pos, RecordField& f) {
  if (pos >= text.size() || text[pos] != '@')
    return FieldProblem{pos, fmt::format("expected '@' after the field name, found {}", detail::quote_char(text, pos))};
  ++pos;
  bool negative = false;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) negative = text[pos++] == '-';
  std::size_t end = pos;
  while (end < text.size() && text[end] != ':' && !separator(text[end])) ++end;
  detail::ScanFailure failure;
  auto magnitude = detail::scan_number(text, pos, end, NumberStyle::value, failure);
  if (!magnitude) return FieldProblem{failure.column, "OFFSET: " + failure.problem};
  if (*magnitude >= static_cast<std::uint64_t>(kMaxFieldOffset))
    return FieldProblem{pos, fmt::format("OFFSET {:#x} is 1 MiB or more from the anchor", *magnitude)};
  f.offset = negative ? -static_cast<std::int64_t>(*magnitude) : static_cast<std::int64_t>(*magnitude);
  pos = end;
  return std::nullopt;
}

// A field's "[OP VALUE]" at `pos` (moved past it) into f.op and f.value;
// `type_begin`: where its type began (a letter after the type is a bad type).
std::optional<FieldProblem> parse_field_constraint(std::string_view text, std::size_t& pos, std::size_t type_begin,
                                                   RecordField& f) {
  const std::size_t op_begin = pos;
  const char c = text[pos];
  const char n = pos + 1 < text.size() ? text[pos + 1] : '\0';
  if (c == '=' && n == '=') f.op = CompareOp::eq, pos += 2;
  else if (c == '=') f.op = CompareOp::eq, pos += 1;
  else if (c == '!' && n == '=') f.op = CompareOp::ne, pos += 2;
  else if (c == '<' && n == '=') f.op = CompareOp::le, pos += 2;
  else if (c == '<') f.op = CompareOp::lt, pos += 1;
  else if (c == '>' && n == '=') f.op = CompareOp::ge, pos += 2;
  else if (c == '>') f.op = CompareOp::gt, pos += 1;
  else if (text.substr(pos, 2) == "be" || text.substr(pos, 2) == "le" || name_char(c))
    return FieldProblem{type_begin, "unknown type: u8, u16, u32 or u64 (optionally followed by be or le)"};
  else
    return FieldProblem{op_begin, fmt::format("expected a constraint (= == != < <= > >=) or a space, found {}",
                                              detail::quote_char(text, op_begin))};
  std::size_t end = pos;
  while (end < text.size() && !separator(text[end])) ++end;
  detail::ScanFailure failure;
  auto value = detail::scan_number(text, pos, end, NumberStyle::value, failure);
  if (!value) return FieldProblem{failure.column, "VALUE: " + failure.problem};
  if (*value > max_word_value(f.width))
    return FieldProblem{pos, fmt::format("VALUE {:#x} does not fit in a {}-byte field", *value, f.width)};
  f.value = *value;
  pos = end;
  return std::nullopt;
}

// A field's ":TYPE" (u8 to u64, be or le after it; else `default_order`) and
// its constraint, at `pos` (moved past them), into `f`.
std::optional<FieldProblem> parse_field_type(std::string_view text, std::size_t& pos, ByteOrder default_order,
                                             RecordField& f) {
  if (pos >= text.size() || text[pos] != ':')
    return FieldProblem{pos, fmt::format("expected ':' and a type after the offset, found {}", detail::quote_char(text, pos))};
  ++pos;
  const std::size_t type_begin = pos;
  if (pos >= text.size() || (text[pos] != 'u' && text[pos] != 'U'))
    return FieldProblem{pos, fmt::format("expected a type (u8, u16, u32, u64), found {}", detail::quote_char(text, pos))};
  ++pos;
  std::size_t digits_end = pos;
  while (digits_end < text.size() && text[digits_end] >= '0' && text[digits_end] <= '9') ++digits_end;
  const std::string_view bits = text.substr(pos, digits_end - pos);
  if (bits == "8") f.width = 1;
  else if (bits == "16") f.width = 2;
  else if (bits == "32") f.width = 4;
  else if (bits == "64") f.width = 8;
  else return FieldProblem{type_begin, "unknown type: u8, u16, u32 or u64"};
  pos = digits_end;
  f.order = default_order;
  if (text.substr(pos, 2) == "be") f.order = ByteOrder::big, pos += 2;
  else if (text.substr(pos, 2) == "le") f.order = ByteOrder::little, pos += 2;
  if (pos < text.size() && !separator(text[pos])) return parse_field_constraint(text, pos, type_begin, f);
  return std::nullopt;
}

}  // namespace

Result<RecordTemplate> RecordTemplate::parse(std::string_view text, ByteOrder default_order, SyntaxError* syntax) {
  auto fail = [&](std::size_t column, std::string problem) {
    return detail::syntax_failure(syntax, "template", text, column, std::move(problem), kTemplateGrammar);
  };
  RecordTemplate t;
  t.text_ = std::string(text);
  std::vector<std::size_t> name_columns;
  std::size_t pos = 0;
  auto skip_separators = [&] {
    while (pos < text.size() && separator(text[pos])) ++pos;
  };
  skip_separators();
  if (pos == text.size()) return fail(pos, "empty record template");
  while (pos < text.size()) {
    RecordField f;
    // NAME
    const std::size_t name_begin = pos;
    if (!name_start(text[pos]))
      return fail(pos, fmt::format("expected a field name (a letter or _), found {}", detail::quote_char(text, pos)));
    while (pos < text.size() && name_char(text[pos])) ++pos;
    f.name = std::string(text.substr(name_begin, pos - name_begin));
    for (std::size_t i = 0; i < t.fields_.size(); ++i)
      if (t.fields_[i].name == f.name)
        return fail(name_begin, fmt::format("field \"{}\" named twice (first at column {})", f.name, name_columns[i] + 1));
    if (t.fields_.size() == kMaxFields) return fail(name_begin, fmt::format("more than {} fields", kMaxFields));
    if (auto bad = parse_field_offset(text, pos, f)) return fail(bad->column, std::move(bad->problem));
    if (auto bad = parse_field_type(text, pos, default_order, f)) return fail(bad->column, std::move(bad->problem));
    name_columns.push_back(name_begin);
    t.fields_.push_back(std::move(f));
    skip_separators();
  }
  // The anchor: the "=" field at offset 0, else the first "=" field.
  std::optional<std::size_t> anchor;
  for (std::size_t i = 0; i < t.fields_.size(); ++i) {
    const RecordField& f = t.fields_[i];
    if (f.op != CompareOp::eq) continue;
    if (!anchor || (f.offset == 0 && t.fields_[*anchor].offset != 0)) anchor = i;
  }
  if (!anchor) return fail(text.size(), "no field has an =VALUE constraint to search for (the anchor)");
  t.anchor_ = *anchor;
  const std::int64_t base = t.fields_[t.anchor_].offset;
  for (RecordField& f : t.fields_) f.offset -= base;  // offsets now from the anchor's first byte
  t.min_offset_ = 0;
  t.max_end_ = t.fields_[t.anchor_].width;
  for (const RecordField& f : t.fields_) {
    t.min_offset_ = std::min(t.min_offset_, f.offset);
    t.max_end_ = std::max(t.max_end_, f.offset + static_cast<std::int64_t>(f.width));
  }
  return t;
}

std::vector<std::uint8_t> RecordTemplate::anchor_bytes() const {
  const RecordField& a = anchor();
  return encode_word(a.value, a.width, a.order);
}

bool RecordTemplate::matches(const std::uint8_t* anchor) const noexcept {
  for (const RecordField& f : fields_) {
    if (!f.op) continue;
    if (!compare(decode_word(anchor + f.offset, f.width, f.order), *f.op, f.value)) return false;
  }
  return true;
}

std::vector<std::uint64_t> RecordTemplate::decode(const std::uint8_t* anchor) const {
  std::vector<std::uint64_t> out;
  out.reserve(fields_.size());
  for (const RecordField& f : fields_) out.push_back(decode_word(anchor + f.offset, f.width, f.order));
  return out;
}

}  // namespace extmem::memtools
