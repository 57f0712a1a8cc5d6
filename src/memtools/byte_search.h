// Private to memtools: a fast exact byte-string search for `extmem scan`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace extmem::memtools::detail {

/// Finds a needle in byte ranges. For needles of 2 bytes or more it compares
/// two of the needle's rarer bytes (by a fixed guess of byte frequencies in
/// memory images: 0x00 and 0xff are common, most others rarer) at 32 (AVX2) or
/// 16 (SSE2) candidate positions per step and verifies candidates with memcmp;
/// a 1-byte needle is memchr. Elsewhere than x86-64 it is memmem.
class ByteSearcher {
 public:
  /// `needle`: 1 byte or more; copied.
  explicit ByteSearcher(std::span<const std::uint8_t> needle);

  /// First position p in [begin, end - needle size] where the needle starts,
  /// or `end` when there is none.
  const std::uint8_t* find(const std::uint8_t* begin, const std::uint8_t* end) const noexcept;

  std::size_t size() const noexcept { return needle_.size(); }

 private:
  std::vector<std::uint8_t> needle_;
  std::size_t first_ = 0, second_ = 0;  // the two positions compared before memcmp
  bool avx2_ = false;
};

}  // namespace extmem::memtools::detail
