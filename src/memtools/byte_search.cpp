#include "memtools/byte_search.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

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
// The first of the candidates at s + i (bit i of `mask`) that starts the
// needle, or nullptr.
inline const std::uint8_t* verify(const std::uint8_t* s, std::uint64_t mask, const std::uint8_t* needle,
                                  std::size_t n) {
  for (; mask != 0; mask &= mask - 1) {
    const std::uint8_t* c = s + __builtin_ctzll(mask);
    if (std::memcmp(c, needle, n) == 0) return c;
  }
  return nullptr;
}

// Candidate starts s in [begin, limit) where s[a] == needle[a] and s[b] == needle[b],
// each verified with memcmp; returns the first match or nullptr when none before limit.
__attribute__((target("avx2"))) const std::uint8_t* find_avx2(const std::uint8_t* begin, const std::uint8_t* limit,
                                                             const std::uint8_t* needle, std::size_t n,
                                                             std::size_t a, std::size_t b) {
  const __m256i va = _mm256_set1_epi8(static_cast<char>(needle[a]));
  const __m256i vb = _mm256_set1_epi8(static_cast<char>(needle[b]));
  const std::uint8_t* s = begin;
  // Two vectors a step, one branch for both: candidates are rare, and the
  // loop's own instructions were the search's cost (perf: 24 % of --hex).
  for (; s + 64 <= limit; s += 64) {
    const __m256i c0 = _mm256_and_si256(
        _mm256_cmpeq_epi8(va, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + a))),
        _mm256_cmpeq_epi8(vb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + b))));
    const __m256i c1 = _mm256_and_si256(
        _mm256_cmpeq_epi8(va, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32 + a))),
        _mm256_cmpeq_epi8(vb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32 + b))));
    const __m256i any = _mm256_or_si256(c0, c1);
    if (_mm256_testz_si256(any, any)) continue;
    std::uint64_t mask = static_cast<std::uint32_t>(_mm256_movemask_epi8(c0)) |
                         static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(c1))) << 32;
    if (const std::uint8_t* c = verify(s, mask, needle, n)) return c;
  }
  for (; s + 32 <= limit; s += 32) {
    const __m256i ca = _mm256_cmpeq_epi8(va, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + a)));
    const __m256i cb = _mm256_cmpeq_epi8(vb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + b)));
    const auto mask = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_and_si256(ca, cb)));
    if (const std::uint8_t* c = verify(s, mask, needle, n)) return c;
  }
  for (; s < limit; ++s)
    if (s[a] == needle[a] && s[b] == needle[b] && std::memcmp(s, needle, n) == 0) return s;
  return nullptr;
}

// find_avx2 on AVX-512BW, with aligned loads: each 64-byte vector is
// compared with both bytes (bit q of a mask: byte q matches), and the
// earlier byte's mask shifted by the distance between the two (bits carried
// from the previous vector) gives the candidates. One load a vector, never
// split across cache lines: two unaligned loads a step were the search's
// cost (perf: 24 % of --hex). The ends, and bytes 64 or more apart, go to
// find_avx2.
__attribute__((target("avx512f,avx512bw,bmi2"))) const std::uint8_t* find_avx512(const std::uint8_t* begin,
                                                                           const std::uint8_t* limit,
                                                                           const std::uint8_t* needle, std::size_t n,
                                                                           std::size_t a, std::size_t b) {
  const std::size_t hi = std::max(a, b), lo = std::min(a, b), gap = hi - lo;
  const std::uint8_t* end = limit + n - 1;  // past the last byte a candidate reads
  if (gap >= 64 || end - begin < static_cast<std::ptrdiff_t>(hi + 256)) return find_avx2(begin, limit, needle, n, a, b);
  // The first vector at or after begin + hi + 64: its previous one lies
  // inside [begin, end), and its candidates start at begin or later.
  const auto first = reinterpret_cast<std::uintptr_t>(begin + hi + 64 + 63) & ~std::uintptr_t{63};
  const std::uint8_t* v = begin + (first - reinterpret_cast<std::uintptr_t>(begin));
  if (const std::uint8_t* c = find_avx2(begin, std::min(limit, v - hi), needle, n, a, b)) return c;
  const __m512i vhi = _mm512_set1_epi8(static_cast<char>(needle[hi]));
  const __m512i vlo = _mm512_set1_epi8(static_cast<char>(needle[lo]));
  std::uint64_t carried = _mm512_cmpeq_epi8_mask(vlo, _mm512_load_si512(v - 64)) >> (64 - gap);
  // Bit q of a vector's mask: a candidate starting at v + q - hi, before
  // limit while v + 64 <= limit + hi. Two vectors a step, one branch.
  for (; v + 128 <= limit + hi; v += 128) {
    const __m512i d0 = _mm512_load_si512(v), d1 = _mm512_load_si512(v + 64);
    const std::uint64_t low0 = _mm512_cmpeq_epi8_mask(vlo, d0), low1 = _mm512_cmpeq_epi8_mask(vlo, d1);
    const std::uint64_t m0 = _mm512_cmpeq_epi8_mask(vhi, d0) & ((low0 << gap) | carried);
    const std::uint64_t m1 = _mm512_cmpeq_epi8_mask(vhi, d1) & ((low1 << gap) | (low0 >> (64 - gap)));
    carried = low1 >> (64 - gap);
    if ((m0 | m1) == 0) continue;
    if (const std::uint8_t* c = verify(v - hi, m0, needle, n)) return c;
    if (const std::uint8_t* c = verify(v + 64 - hi, m1, needle, n)) return c;
  }
  for (; v + 64 <= limit + hi; v += 64) {
    const __m512i d = _mm512_load_si512(v);
    const std::uint64_t low = _mm512_cmpeq_epi8_mask(vlo, d);
    const std::uint64_t mask = _mm512_cmpeq_epi8_mask(vhi, d) & ((low << gap) | carried);
    carried = low >> (64 - gap);
    if (const std::uint8_t* c = verify(v - hi, mask, needle, n)) return c;
  }
  return v - hi < limit ? find_avx2(v - hi, limit, needle, n, a, b) : nullptr;
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

// Word-aligned search: positions begin + k * W. Vector loads start at such
// positions, so each lane of W bytes is one candidate word; every load ends
// at or before `end`.
template <class Word>
const std::uint8_t* find_words_scalar(const std::uint8_t* s, const std::uint8_t* end, Word word) {
  for (; end - s >= static_cast<std::ptrdiff_t>(sizeof(Word)); s += sizeof(Word)) {
    Word w;
    std::memcpy(&w, s, sizeof w);
    if (w == word) return s;
  }
  return nullptr;
}

#if defined(__x86_64__)
// The first bytes of the W-byte words of a 16-byte comparison mask (a bit per
// byte) whose W bytes all matched.
template <std::size_t W>
std::uint32_t whole_words(std::uint32_t m) {
  if constexpr (W >= 2) m &= m >> 1;
  if constexpr (W >= 4) m &= m >> 2;
  if constexpr (W >= 8) m &= m >> 4;
  constexpr std::uint32_t starts = W == 2 ? 0x5555u : W == 4 ? 0x1111u : 0x0101u;
  return m & starts;
}

template <class Word>
const std::uint8_t* find_words_sse2(const std::uint8_t* s, const std::uint8_t* end, Word word) {
  __m128i v;
  if constexpr (sizeof(Word) == 2) v = _mm_set1_epi16(static_cast<short>(word));
  else if constexpr (sizeof(Word) == 4) v = _mm_set1_epi32(static_cast<int>(word));
  else v = _mm_set1_epi64x(static_cast<long long>(word));
  for (; end - s >= 16; s += 16) {
    const auto m = static_cast<std::uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)))));
    if (m == 0) continue;
    if (const std::uint32_t w = whole_words<sizeof(Word)>(m); w != 0) return s + __builtin_ctz(w);
  }
  return find_words_scalar(s, end, word);
}

template <class Word>
__attribute__((target("avx2"))) const std::uint8_t* find_words_avx2(const std::uint8_t* s, const std::uint8_t* end,
                                                                   Word word) {
  __m256i v;
  if constexpr (sizeof(Word) == 2) v = _mm256_set1_epi16(static_cast<short>(word));
  else if constexpr (sizeof(Word) == 4) v = _mm256_set1_epi32(static_cast<int>(word));
  else v = _mm256_set1_epi64x(static_cast<long long>(word));
  // Two vectors a step, one branch for both.
  for (; end - s >= 64; s += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32));
    __m256i ea, eb;
    if constexpr (sizeof(Word) == 2) ea = _mm256_cmpeq_epi16(v, a), eb = _mm256_cmpeq_epi16(v, b);
    else if constexpr (sizeof(Word) == 4) ea = _mm256_cmpeq_epi32(v, a), eb = _mm256_cmpeq_epi32(v, b);
    else ea = _mm256_cmpeq_epi64(v, a), eb = _mm256_cmpeq_epi64(v, b);
    const __m256i any = _mm256_or_si256(ea, eb);
    if (_mm256_testz_si256(any, any)) continue;
    const auto ma = static_cast<std::uint32_t>(_mm256_movemask_epi8(ea));
    if (ma != 0) return s + __builtin_ctz(ma);
    return s + 32 + __builtin_ctz(static_cast<std::uint32_t>(_mm256_movemask_epi8(eb)));
  }
  return find_words_sse2(s, end, word);
}
#endif

template <class Word>
const std::uint8_t* find_words(const std::uint8_t* s, const std::uint8_t* end, Word word, ScanIsa isa) {
#if defined(__x86_64__)
  // (An AVX-512 form measured no faster: the compares keep pace with L2 already.)
  return isa >= ScanIsa::avx2 ? find_words_avx2(s, end, word) : find_words_sse2(s, end, word);
#else
  (void)isa;
  return find_words_scalar(s, end, word);
#endif
}

}  // namespace

WordSearcher::WordSearcher(std::span<const std::uint8_t> word, ScanIsa isa) : width_(word.size()), isa_(isa) {
  std::memcpy(&word_, word.data(), std::min<std::size_t>(word.size(), 8));
}

const std::uint8_t* WordSearcher::find(const std::uint8_t* begin, const std::uint8_t* end) const noexcept {
  if (end < begin || static_cast<std::size_t>(end - begin) < width_) return end;
  const std::uint8_t* hit = nullptr;
  switch (width_) {
    case 2: hit = find_words(begin, end, static_cast<std::uint16_t>(word_), isa_); break;
    case 4: hit = find_words(begin, end, static_cast<std::uint32_t>(word_), isa_); break;
    case 8: hit = find_words(begin, end, word_, isa_); break;
    default: break;
  }
  return hit != nullptr ? hit : end;
}

ScanIsa scan_isa() noexcept {
  static const ScanIsa isa = [] {
    ScanIsa best = ScanIsa::sse2;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) best = ScanIsa::avx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2"))
      best = ScanIsa::avx512;  // (every AVX-512 CPU has BMI2, which find_avx512's shifts use)
#endif
    if (const char* forced = std::getenv("EXTMEM_SCAN_ISA")) {
      const std::string_view v(forced);
      const ScanIsa want = v == "sse2" ? ScanIsa::sse2 : v == "avx2" ? ScanIsa::avx2 : best;
      if (want < best) best = want;
    }
    return best;
  }();
  return isa;
}

ByteSearcher::ByteSearcher(std::span<const std::uint8_t> needle, ScanIsa isa)
    : needle_(needle.begin(), needle.end()), isa_(isa) {
  // The rarest byte, then the rarest at another position (ties: the later, so
  // the two positions are spread apart).
  for (std::size_t i = 1; i < needle_.size(); ++i)
    if (commonness(needle_[i]) <= commonness(needle_[first_])) first_ = i;
  second_ = first_ == 0 ? 1 : 0;
  for (std::size_t i = 0; i < needle_.size(); ++i)
    if (i != first_ && commonness(needle_[i]) <= commonness(needle_[second_])) second_ = i;
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
  const std::uint8_t* hit = isa_ == ScanIsa::avx512 ? find_avx512(begin, limit, needle_.data(), n, first_, second_)
                            : isa_ == ScanIsa::avx2   ? find_avx2(begin, limit, needle_.data(), n, first_, second_)
                                                      : find_sse2(begin, limit, needle_.data(), n, first_, second_);
  return hit != nullptr ? hit : end;
#else
  const void* p = ::memmem(begin, static_cast<std::size_t>(end - begin), needle_.data(), n);
  return p != nullptr ? static_cast<const std::uint8_t*>(p) : end;
#endif
}

}  // namespace extmem::memtools::detail
