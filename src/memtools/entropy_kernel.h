// Private to memtools: the per-block sums behind `extmem scan --entropy`,
// computed fast enough to keep pace with memory, in fixed point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memtools/byte_search.h"

namespace extmem::memtools::detail {

/// For blocks of `block` bytes: S = sum over byte values v of c_v * log2(c_v)
/// (c_v: how many bytes of the block are v), in units of 2^-32, from which a
/// block's entropy is log2(block) - S / block bits per byte. Every term is
/// rounded to the unit, so S is within block / 2 units of the exact sum and
/// the entropy within 2^-33 bits of it (kEntropyError bounds that and the
/// rounding of the double computation of byte_entropy). 32-byte blocks (the
/// default) take a vector kernel: each byte compared with the 31 others of
/// its block (AVX-512BW: two blocks per 64-byte vector; AVX2: one per 32),
/// so no histogram and no dependency through memory; other sizes, and SSE2
/// alone, count a histogram. Constant blocks (zero pages) are found first.
class EntropySums {
 public:
  explicit EntropySums(std::size_t block, ScanIsa isa = scan_isa());

  /// S of the `count` consecutive blocks at `p` into out[0, count).
  void sums(const std::uint8_t* p, std::size_t count, std::uint64_t* out) const;

  /// The entropy of a block of sum S (an approximation of byte_entropy's).
  double bits(std::uint64_t s) const noexcept { return log2_block_ - static_cast<double>(s) * per_unit_; }

  std::size_t block() const noexcept { return block_; }

 private:
  std::size_t block_;
  ScanIsa isa_;
  double log2_block_, per_unit_;
  std::vector<std::uint64_t> step_;   // step_[c]: (c+1) log2(c+1) - c log2 c, in units (histogram kernel)
  std::vector<std::uint64_t> whole_;  // whole_[c]: c log2 c, in units (constant blocks)
  std::vector<std::uint64_t> log_;    // log_[c]: log2 c, in units (pairwise kernels)
};

/// More than the most that EntropySums::bits and byte_entropy may differ by.
inline constexpr double kEntropyError = 1e-9;

}  // namespace extmem::memtools::detail
