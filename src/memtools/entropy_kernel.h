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
/// so no histogram and no dependency through memory, then S as the sum over
/// the bytes of log2(count) (the same sum regrouped: a value that occurs c
/// times adds log2(c) c times), the 40-bit table of log2 looked up five bytes
/// at a time by byte shuffles and added by vpsadbw; other sizes, and SSE2
/// alone, count a histogram. Constant blocks (zero pages) are found first.
class EntropySums {
 public:
  explicit EntropySums(std::size_t block, ScanIsa isa = scan_isa());

  /// S of the `count` consecutive blocks at `p` into out[0, count).
  void sums(const std::uint8_t* p, std::size_t count, std::uint64_t* out) const { sums(p, count, out, nullptr, nullptr); }

  /// As above, and what the vector kernels learn on the way. exact (null:
  /// not wanted): exact[b] = 1 where bits(out[b]) is byte_entropy's value
  /// bit for bit, which is so when every count is a power of two in a block
  /// of a power-of-two size (each term c log2 c is a whole number, so the sum
  /// is exact whatever its order, and so is the division), else 0 (also
  /// where the kernel does not tell: the histogram one never does). counts
  /// (null: not wanted): where has_counts(), counts[32 b + i] is how many
  /// bytes of block b equal its byte i (1 to 32); elsewhere untouched.
  void sums(const std::uint8_t* p, std::size_t count, std::uint64_t* out, std::uint8_t* exact,
            std::uint8_t* counts) const;

  /// Whether sums() fills `counts`: 32-byte blocks on a vector path.
  bool has_counts() const noexcept;

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
  // Byte j of log_[k + 1] at planes_[32 j + k], k < 32: the tables the
  // pairwise kernels shuffle (32-byte blocks only).
  alignas(64) std::uint8_t planes_[5 * 32] = {};
};

/// byte_entropy's value for blocks of one size, bit for bit, in fewer steps:
/// the same additions in the same order (c log2 c of each byte value that
/// occurs, in increasing order of the value), leaving out those of values
/// that occur once (each adds +0.0, which changes nothing), and with the
/// counts of a vector kernel where it gave them (EntropySums::sums). Holds
/// scratch counts: one per thread.
class ExactEntropy {
 public:
  explicit ExactEntropy(std::size_t block);

  /// The entropy of the block at p; `counts` (null: none) as filled by
  /// EntropySums::sums for this block (32-byte blocks only).
  double operator()(const std::uint8_t* p, const std::uint8_t* counts = nullptr);

 private:
  std::size_t block_;
  double log2_block_, size_;
  std::vector<double> xlogx_;       // xlogx_[c] = c log2 c as byte_entropy computes it
  std::vector<std::uint32_t> seen_;   // per byte value, zero between calls
  std::vector<std::uint32_t> given_;  // per byte value: the counts given, of the values marked
};

/// More than the most that EntropySums::bits and byte_entropy may differ by.
inline constexpr double kEntropyError = 1e-9;

}  // namespace extmem::memtools::detail
