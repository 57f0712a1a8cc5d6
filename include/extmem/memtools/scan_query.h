// What `extmem scan` looks for, parsed from the command line: a byte pattern
// (--hex), an integer of a width and byte order (--u32/--u64), or a record
// template (--record). docs/memtools.md, "`extmem scan`".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// Byte order of an integer in memory.
enum class ByteOrder {
  little,  ///< least significant byte first (x86-64, arm64 as Linux runs them)
  big,     ///< most significant byte first
};

/// "little" or "big".
const char* to_string(ByteOrder order) noexcept;

/// Parses "little"/"le" or "big"/"be". Errors: invalid_argument, step "parse byte order".
Result<ByteOrder> parse_byte_order(std::string_view text, SyntaxError* syntax = nullptr);

/// The `width` bytes (1, 2, 4 or 8) of `value` in `order`.
std::vector<std::uint8_t> encode_word(std::uint64_t value, unsigned width, ByteOrder order);

/// Reads a `width`-byte integer stored in `order` at `bytes` (which must hold `width` bytes).
std::uint64_t decode_word(const std::uint8_t* bytes, unsigned width, ByteOrder order) noexcept;

/// Parses a byte pattern written as hexadecimal digit pairs: "6c696174",
/// "6c 69 61 74", "6c:69:61:74" or "0x6c696174" (bytes in the order written;
/// a leading "0x" is allowed only on an unbroken run). At most 4096 bytes.
/// Errors: invalid_argument, step "parse pattern"; `syntax` points at the bad
/// character (an odd digit count points at the lone digit).
Result<std::vector<std::uint8_t>> parse_hex_pattern(std::string_view text, SyntaxError* syntax = nullptr);

/// One field of a record template: `width` bytes at `offset` bytes from the anchor.
struct RecordField {
  std::string name;                     ///< [A-Za-z_][A-Za-z0-9_]*, unique within the template
  std::int64_t offset = 0;              ///< bytes from the anchor's first byte (may be negative)
  unsigned width = 8;                   ///< 1, 2, 4 or 8 bytes
  ByteOrder order = ByteOrder::little;  ///< "u32be"/"u32le" in the template, else the default given to parse()
  std::optional<CompareOp> op;          ///< constraint, when the field has one
  std::uint64_t value = 0;              ///< the constraint's right-hand side
};

/// A parsed record template, e.g.
/// "va@-0x18:u64 size@-0x10:u64 zero@-0x8:u64=0 marker@0:u32=0x7461696c".
/// The anchor is the field searched for: the one at offset 0 with an "="
/// constraint, else the first field with an "=" constraint. It is looked for at
/// its natural alignment (a multiple of its width); every other field must then
/// lie in the data and satisfy its constraint.
class RecordTemplate {
 public:
  /// Grammar: FIELD{ FIELD}, fields separated by spaces (or commas);
  /// FIELD = NAME@OFFSET:TYPE[OP VALUE]; OFFSET an optionally signed decimal or
  /// 0x-hex number of bytes, |OFFSET| < 1 MiB; TYPE u8|u16|u32|u64, optionally
  /// suffixed be|le; OP one of = == != < <= > >=; VALUE decimal or 0x-hex
  /// fitting the type. At most 64 fields. `default_order` applies to TYPEs
  /// without a suffix. Errors: invalid_argument, step "parse template";
  /// `syntax` points at the offending character.
  static Result<RecordTemplate> parse(std::string_view text, ByteOrder default_order = ByteOrder::little,
                                      SyntaxError* syntax = nullptr);

  const std::vector<RecordField>& fields() const noexcept { return fields_; }
  const RecordField& anchor() const noexcept { return fields_[anchor_]; }
  /// Bytes searched for: the anchor's value in its byte order.
  std::vector<std::uint8_t> anchor_bytes() const;
  /// Lowest field offset (<= 0) and highest field end (>= anchor width), bytes from the anchor.
  std::int64_t min_offset() const noexcept { return min_offset_; }
  std::int64_t max_end() const noexcept { return max_end_; }
  /// Whether every constraint holds for the record whose anchor is at
  /// `anchor`; the caller guarantees bytes [anchor + min_offset(), anchor + max_end()) are readable.
  bool matches(const std::uint8_t* anchor) const noexcept;
  /// Each field's value, in template order (same precondition as matches()).
  std::vector<std::uint64_t> decode(const std::uint8_t* anchor) const;
  const std::string& text() const noexcept { return text_; }

 private:
  std::vector<RecordField> fields_;
  std::size_t anchor_ = 0;
  std::int64_t min_offset_ = 0, max_end_ = 0;
  std::string text_;
};

}  // namespace extmem::memtools
