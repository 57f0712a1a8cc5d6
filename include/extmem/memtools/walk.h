// `extmem walk`: translate a virtual address by walking page tables stored in
// a RAM image, one step per level, every step recorded so a wrong walk shows
// where it went wrong. docs/memtools.md, "`extmem walk`".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/ram_map.h"
#include "extmem/memtools/walk_format.h"
#include "extmem/os/fd.h"

namespace extmem::memtools {

/// A RAM image read by physical address: a file whose bytes are placed in
/// guest-physical space by a ram-map (or, without one, physical address = file
/// offset). Owns its fd; move-only.
class PhysicalImage {
 public:
  /// Opens `path` read-only. With a ram-map, every range must lie inside the
  /// file. Errors: os_error("open PATH"|"fstat PATH"); kCodePastEnd
  /// (invalid_argument) when a range runs past the end of the file ("the file is
  /// shorter than the ram-map says").
  static Result<PhysicalImage> open(const std::string& path, std::optional<RamMap> ram_map);

  /// File offset holding physical address `pa`, nullopt outside every range.
  std::optional<std::uint64_t> file_offset(std::uint64_t pa) const noexcept;

  /// Reads the `width`-byte (4 or 8) word at physical address `pa` in `order`.
  /// Errors: kCodeNotMapped outside every ram-map range, kCodeCrossesMapping
  /// when the word runs out of its range, kCodePastEnd past the end of the
  /// file, os_error("pread PATH") (all with step "read PA 0x...").
  Result<std::uint64_t> read(std::uint64_t pa, unsigned width, ByteOrder order) const;

  const std::string& path() const noexcept { return path_; }
  std::uint64_t size() const noexcept { return size_; }  ///< bytes of the file

 private:
  os::UniqueFd fd_;
  std::string path_;
  std::uint64_t size_ = 0;
  std::optional<RamMap> ram_map_;
};

/// What a step decided.
enum class StepDecision {
  table,    ///< valid, points at the next level's table
  leaf,     ///< valid, maps a page: the walk ends with a physical address
  invalid,  ///< the valid test failed: no translation through this part
  error,    ///< the entry could not be read (outside the ram-map, past the file's end)
};

/// "table", "leaf", "invalid", "error".
const char* to_string(StepDecision decision) noexcept;

/// One entry read during a walk.
struct WalkStep {
  std::string level;                        ///< level name
  std::string part;                         ///< part name ("" for single-part entries)
  std::uint64_t index = 0;                  ///< index into the table
  unsigned index_high = 0, index_low = 0;   ///< the VA bits the index came from (inclusive)
  std::uint64_t table = 0;                  ///< table's physical address
  std::uint64_t entry_address = 0;          ///< physical address of the word read
  std::optional<std::uint64_t> file_offset; ///< where that word is in the file
  std::uint64_t entry = 0;                  ///< the word (0 when not read)
  StepDecision decision = StepDecision::invalid;
  std::uint64_t next = 0;                   ///< table: next table's address; leaf: page address
  std::string aperture;                     ///< aperture name (or number) when the format has one
  std::string note;                         ///< why invalid, or the read error
};

/// One chain of steps from the root to a page (or to where it stopped).
struct WalkChain {
  std::string label;                        ///< names of the dual-entry halves taken ("" when none): "small", "big"
  std::vector<WalkStep> steps;
  std::optional<std::uint64_t> physical;    ///< the translation, when it reached a leaf
  std::uint64_t page_size = 0;              ///< bytes mapped by that leaf
  std::optional<std::uint64_t> file_offset; ///< where `physical` is in the file (nullopt outside the ram-map)
  std::optional<Error> error;               ///< the read error that stopped it
};

/// The walk of one VA.
struct WalkResult {
  std::uint64_t va = 0;
  std::vector<WalkChain> chains;  ///< one, or with all_chains one per valid combination of dual halves
  /// The chain to report: the first that translated, else the first.
  const WalkChain& primary() const;
};

/// Walks `va` through the tables under `root` (physical address of the root
/// table). Without `all_chains` a multi-part entry continues with its first
/// valid part (the invalid ones before it are recorded); with it, every part
/// starts its own chain (at most 64 chains: a format of many dual levels
/// would otherwise fork without bound). Errors (invalid_argument, kCodeNotMapped, step
/// "walk VA"): the VA lies outside the format's range (above va_bits, or not
/// canonical for a sign-extended format). Read errors do not fail the call:
/// they end their chain (WalkChain::error).
Result<WalkResult> walk(const WalkFormat& format, const PhysicalImage& image, std::uint64_t root, std::uint64_t va,
                        bool all_chains);

}  // namespace extmem::memtools
