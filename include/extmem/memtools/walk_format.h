// Page-table formats for `extmem walk`, as data: levels, index bits, entry
// size, valid/leaf/aperture bits and the address field, loaded from a JSON
// description. The two built-in formats (x86-64 4-level, GMMU-style) are JSON
// of the same form (docs/walk-formats/*.json). docs/memtools.md, "`extmem walk`".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/scan_query.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// A test on an entry word: holds when (word & mask) == value, or, without a
/// value, when (word & mask) != 0.
struct EntryTest {
  std::uint64_t mask = 0;
  std::optional<std::uint64_t> value;
  bool holds(std::uint64_t word) const noexcept { return value ? (word & mask) == *value : (word & mask) != 0; }
};

/// An address field: bits [low, high] of the word, shifted left by `shift`.
struct AddressField {
  unsigned low = 12, high = 51, shift = 12;
  std::uint64_t extract(std::uint64_t word) const noexcept {
    const unsigned bits = high - low + 1;
    const std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    return ((word >> low) & mask) << shift;
  }
};

/// One word of an entry; an ordinary entry has one part, a dual (big/small)
/// entry two, tried in order.
struct EntryPart {
  std::string name;                   ///< "" for a single-part entry; e.g. "big", "small"
  unsigned offset = 0;                ///< bytes into the entry
  unsigned bytes = 8;                 ///< word size: 4 or 8
  EntryTest valid;                    ///< the part is usable when this holds
  std::optional<EntryTest> leaf_if;   ///< with `next`: the part maps a page (not a table) when this holds
  AddressField address;               ///< next table's physical address, or the page's for a leaf
  std::optional<AddressField> leaf_address;  ///< the page's address when leaf_if holds (default: `address`)
  std::optional<std::size_t> next;    ///< index of the next level in WalkFormat::levels; none: always a leaf
  std::optional<AddressField> aperture;      ///< where the address points, shown by name
  std::vector<std::string> aperture_names;   ///< names of the aperture values 0, 1, ...
};

/// One level of the tables: index = (VA >> shift) & (2^index_bits - 1);
/// the entry is at table + index * entry_bytes. A leaf here maps 2^shift bytes.
struct WalkLevel {
  std::string name;
  unsigned shift = 12;
  unsigned index_bits = 9;
  unsigned entry_bytes = 8;  ///< 4, 8 or 16
  std::vector<EntryPart> parts;
};

/// A whole format.
struct WalkFormat {
  std::string name;
  std::string description;
  unsigned va_bits = 48;                ///< VAs must fit in this many bits
  bool sign_extended = false;           ///< VAs are canonical: bits va_bits-1..63 all equal (x86-64)
  ByteOrder order = ByteOrder::little;  ///< of entry words
  std::size_t root = 0;                 ///< index of the root level
  /// Bits of a root value that are flags, not address, dropped before the walk
  /// with a note (x86-64: CR3 bits 0-11, PCID or PWT/PCD, and bit 63, the
  /// no-flush bit of a MOV to CR3), so a register value can be pasted as printed.
  std::uint64_t root_flags = 0;
  /// One line shown when a walk finds the root level's entry invalid, naming
  /// a likely reason (x86-64: the guest may use 5-level paging); may be empty.
  std::string root_hint;
  std::vector<WalkLevel> levels;

  /// Loads a JSON description (docs/memtools.md, "Formats"). Checks: known
  /// keys only, sizes and bit ranges in range, `next` naming a level whose
  /// shift is lower (so every walk ends), the root covering va_bits. Errors:
  /// invalid_argument, step "parse format": a JSON syntax error fills
  /// `syntax` with its column; a wrong key or value names its JSON path
  /// ("/levels/2/shift: ...").
  static Result<WalkFormat> from_json(std::string_view text, SyntaxError* syntax = nullptr);

  /// A built-in format by name ("x86-64", "x86-64-la57", "gmmu"); nullopt for another name.
  static std::optional<WalkFormat> builtin(std::string_view name);
  /// The JSON text of a built-in format; empty for another name.
  static std::string_view builtin_json(std::string_view name);
  /// Names of the built-in formats.
  static std::vector<std::string> builtin_names();
};

}  // namespace extmem::memtools
