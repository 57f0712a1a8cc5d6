#include "memtools/byte_search.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace extmem::memtools::detail {
namespace {

// A guess at how common each byte is in RAM images: higher is more common.
// Zero pages and zero padding dominate, then all-ones, then small integers,
// spaces and ASCII letters; the rest are comparatively rare.
int commonness(std::uint8_t b) {
  if (b == 0x00) return 100;
  if (b == 0xff) return 60;
  if (b <= 0x08) return 40;
  if (b == 0x20 || b == 0x0a) return 35;
  if ((b >= 'a' && b <= 'z') || (b >= '0' && b <= '9')) return 30;
  if (b >= 'A' && b <= 'Z') return 25;
  if (b >= 0x80) return 10;
  return 15;
}

#if defined(__x86_64__)
// Candidate starts s in [begin, limit) where s[a] == needle[a] and s[b] == needle[b],
// each verified with memcmp; returns the first match or nullptr when none before limit.
__attribute__((target("avx2"))) const std::uint8_t* find_avx2(const std::uint8_t* begin, const std::uint8_t* limit,
                                                             const std::uint8_t* needle, std::size_t n,
                                                             std::size_t a, std::size_t b) {
  const __m256i va = _mm256_set1_epi8(static_cast<char>(needle[a]));
  const __m256i vb = _mm256_set1_epi8(static_cast<char>(needle[b]));
  const std::uint8_t* s = begin;
  for (; s + 32 <= limit; s += 32) {
    const __m256i ca = _mm256_cmpeq_epi8(va, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + a)));
    const __m256i cb = _mm256_cmpeq_epi8(vb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + b)));
    auto mask = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_and_si256(ca, cb)));
    while (mask != 0) {
      const std::uint8_t* c = s + __builtin_ctz(mask);
      if (std::memcmp(c, needle, n) == 0) return c;
      mask &= mask - 1;
    }
  }
  for (; s < limit; ++s)
    if (s[a] == needle[a] && s[b] == needle[b] && std::memcmp(s, needle, n) == 0) return s;
  return nullptr;
}

const std::uint8_t* find_sse2(const std::uint8_t* begin, const std::uint8_t* limit, const std::uint8_t* needle,
                              std::size_t n, std::size_t a, std::size_t b) {
  const __m128i va = _mm_set1_epi8(static_cast<char>(needle[a]));
  const __m128i vb = _mm_set1_epi8(static_cast<char>(needle[b]));
  const std::uint8_t* s = begin;
  for (; s + 16 <= limit; s += 16) {
    const __m128i ca = _mm_cmpeq_epi8(va, _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + a)));
    const __m128i cb = _mm_cmpeq_epi8(vb, _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + b)));
    auto mask = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_and_si128(ca, cb)));
    while (mask != 0) {
      const std::uint8_t* c = s + __builtin_ctz(mask);
      if (std::memcmp(c, needle, n) == 0) return c;
      mask &= mask - 1;
    }
  }
  for (; s < limit; ++s)
    if (s[a] == needle[a] && s[b] == needle[b] && std::memcmp(s, needle, n) == 0) return s;
  return nullptr;
}
#endif

}  // namespace

ByteSearcher::ByteSearcher(std::span<const std::uint8_t> needle) : needle_(needle.begin(), needle.end()) {
  // The rarest byte, then the rarest at another position (ties: the later, so
  // the two positions are spread apart).
  for (std::size_t i = 1; i < needle_.size(); ++i)
    if (commonness(needle_[i]) <= commonness(needle_[first_])) first_ = i;
  second_ = first_ == 0 ? 1 : 0;
  for (std::size_t i = 0; i < needle_.size(); ++i)
    if (i != first_ && commonness(needle_[i]) <= commonness(needle_[second_])) second_ = i;
#if defined(__x86_64__)
  avx2_ = __builtin_cpu_supports("avx2");
#endif
}

const std::uint8_t* ByteSearcher::find(const std::uint8_t* begin, const std::uint8_t* end) const noexcept {
  const std::size_t n = needle_.size();
  if (end < begin || static_cast<std::size_t>(end - begin) < n) return end;
  if (n == 1) {
    const void* p = std::memchr(begin, needle_[0], static_cast<std::size_t>(end - begin));
    return p != nullptr ? static_cast<const std::uint8_t*>(p) : end;
  }
  // Candidate starts run to end - n inclusive; every load s + first_/second_ + vector width
  // stays below end because the vector loops stop at limit - width.
  const std::uint8_t* limit = end - n + 1;
#if defined(__x86_64__)
  const std::uint8_t* hit = avx2_ ? find_avx2(begin, limit, needle_.data(), n, first_, second_)
                                  : find_sse2(begin, limit, needle_.data(), n, first_, second_);
  return hit != nullptr ? hit : end;
#else
  const void* p = ::memmem(begin, static_cast<std::size_t>(end - begin), needle_.data(), n);
  return p != nullptr ? static_cast<const std::uint8_t*>(p) : end;
#endif
}

}  // namespace extmem::memtools::detail
