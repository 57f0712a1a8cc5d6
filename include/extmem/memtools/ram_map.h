// --ram-map=GPA:FILEOFF:SIZE[,...]: how guest-physical ranges are laid out in a
// guest RAM file (e.g. QEMU's memory-backend-file), in both directions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// One range: `size` bytes of guest-physical address space starting at `gpa`
/// are stored in the file starting at byte `file_offset`.
struct RamRange {
  std::uint64_t gpa = 0;          ///< guest-physical address, bytes
  std::uint64_t file_offset = 0;  ///< bytes from the start of the file
  std::uint64_t size = 0;         ///< bytes, > 0
};

/// A validated ram-map: ranges sorted by gpa, no two overlapping in
/// guest-physical space nor in the file, none wrapping past 2^64.
class RamMap {
 public:
  /// Parses "GPA:FILEOFF:SIZE[,GPA:FILEOFF:SIZE...]"; GPA is
  /// NumberStyle::address (hexadecimal, "0n" for decimal, no unit), FILEOFF
  /// and SIZE are NumberStyle::quantity (decimal, 0x-hex, K/M/G). Errors: invalid_argument,
  /// step "parse ram-map"; `syntax`, when not null, points at the bad
  /// character (for an overlap: the start of the later range, naming the other).
  static Result<RamMap> parse(std::string_view text, SyntaxError* syntax = nullptr);

  /// File offset holding guest-physical address `gpa`; nullopt outside every range.
  std::optional<std::uint64_t> to_file_offset(std::uint64_t gpa) const noexcept;
  /// Guest-physical address stored at `file_offset`; nullopt outside every range.
  std::optional<std::uint64_t> to_gpa(std::uint64_t file_offset) const noexcept;

  const std::vector<RamRange>& ranges() const noexcept { return ranges_; }

 private:
  std::vector<RamRange> ranges_;
};

}  // namespace extmem::memtools
