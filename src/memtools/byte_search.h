// Private to memtools: a fast exact byte-string search for `extmem scan`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace extmem::memtools::detail {

/// The instruction sets the scan kernels may use: the best the CPU has, or
/// fewer when EXTMEM_SCAN_ISA=sse2|avx2 asks (tests run every path; the
/// answers are the same on each). Read once per process; the
/// kernels also take one explicitly, for tests.
enum class ScanIsa { sse2, avx2, avx512 };
ScanIsa scan_isa() noexcept;

/// Finds a needle in byte ranges. For needles of 2 bytes or more it compares
/// two of the needle's rarer bytes (by a fixed guess of byte frequencies in
/// memory images: 0x00 and 0xff are common, most others rarer) at 128
/// (AVX-512BW, from aligned loads), 64 (AVX2) or 16 (SSE2) candidate
/// positions per step and verifies candidates with memcmp;
/// a 1-byte needle is memchr. Elsewhere than x86-64 it is memmem.
class ByteSearcher {
 public:
  /// `needle`: 1 byte or more; copied.
  explicit ByteSearcher(std::span<const std::uint8_t> needle, ScanIsa isa = scan_isa());

  /// First position p in [begin, end - needle size] where the needle starts,
  /// or `end` when there is none.
  const std::uint8_t* find(const std::uint8_t* begin, const std::uint8_t* end) const noexcept;

  std::size_t size() const noexcept { return needle_.size(); }

 private:
  std::vector<std::uint8_t> needle_;
  std::size_t first_ = 0, second_ = 0;  // the two positions compared before memcmp
  ScanIsa isa_;
};

/// Finds a 2-, 4- or 8-byte word at positions aligned to its width (the
/// aligned search of `scan --u16/--u32/--u64` and of a record's anchor):
/// whole vectors compared word by word (64 bytes a step with AVX2, 16 with
/// SSE2), so a value made of bytes common in memory makes no more work than a
/// rare one. Elsewhere than x86-64, a word at a time.
class WordSearcher {
 public:
  /// `word`: 2, 4 or 8 bytes, in memory order; copied.
  explicit WordSearcher(std::span<const std::uint8_t> word, ScanIsa isa = scan_isa());

  /// First position p in [begin, end - width], p - begin a multiple of the
  /// width, where the word is; `end` when there is none. `begin` itself need
  /// not be aligned in memory.
  const std::uint8_t* find(const std::uint8_t* begin, const std::uint8_t* end) const noexcept;

  std::size_t size() const noexcept { return width_; }

 private:
  std::uint64_t word_ = 0;  // the word's bytes, in memory order, in the low `width_` bytes
  std::size_t width_ = 0;
  ScanIsa isa_;
};

}  // namespace extmem::memtools::detail
