#include "memtools/entropy_kernel.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace extmem::memtools::detail {
namespace {

constexpr double kUnit = 4294967296.0;  // 2^32 units per bit

std::uint64_t units(double bits) { return static_cast<std::uint64_t>(std::llround(bits * kUnit)); }

// Whether the n bytes at p are all p[0].
bool constant_block(const std::uint8_t* p, std::size_t n) {
  const std::uint64_t repeated = 0x0101010101010101ull * p[0];
  std::uint64_t differs = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    differs |= w ^ repeated;
  }
  for (; i < n; ++i) differs |= p[i] ^ p[0];
  return differs == 0;
}

// S of one block by a histogram: each byte adds the step from its value's count so far.
std::uint64_t histogram_sum(const std::uint8_t* p, std::size_t n, const std::uint64_t* step, std::uint32_t* counts) {
  std::uint64_t s0 = 0, s1 = 0;
  std::size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const std::uint8_t a = p[i];
    s0 += step[counts[a]++];
    const std::uint8_t b = p[i + 1];
    s1 += step[counts[b]++];
  }
  if (i < n) s0 += step[counts[p[i]]++];
  if (n <= 256) {
    for (std::size_t k = 0; k < n; ++k) counts[p[k]] = 0;
  } else {
    std::memset(counts, 0, 256 * sizeof *counts);
  }
  return s0 + s1;
}

#if defined(__x86_64__)
// S from the counts of the others (c - 1) of each byte of a 32-byte block:
// the sum over the bytes of log2(c), grouped by c. `count_mask(k)`: the bytes
// whose count of others is k, one bit each. A macro, not a function taking a
// lambda: the lambda would not inherit its kernel's target.
#define EXTMEM_SUM_BY_COUNT(result, count_mask, log)                          \
  do {                                                                         \
    std::uint64_t s_ = 0;                                                      \
    int left_ = 32;                                                            \
    for (int k_ = 1; left_ > 0 && k_ <= 32; ++k_) {                            \
      const int nk_ = __builtin_popcount(count_mask(k_ - 1));                  \
      s_ += static_cast<std::uint64_t>(nk_) * (log)[k_];                       \
      left_ -= nk_;                                                            \
    }                                                                          \
    (result) = s_;                                                             \
  } while (false)

__attribute__((target("avx2,popcnt"))) void pairwise32_avx2(const std::uint8_t* p, std::size_t count,
                                                             std::uint64_t* out, const std::uint64_t* log) {
  for (std::size_t b = 0; b < count; ++b, p += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    // A constant block (a zero page) first: every byte equals the first.
    const __m256i first = _mm256_broadcastb_epi8(_mm256_castsi256_si128(v));
    if (static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, first))) == 0xffffffffu) {
      out[b] = 32 * log[32];
      continue;
    }
    // Byte i against byte i + r (mod 32), r = 1..31: t is v rotated by 16,
    // alignr(t, v, r) by r and alignr(v, t, r) by 16 + r.
    const __m256i t = _mm256_permute2x128_si256(v, v, 0x01);
    __m256i a0 = _mm256_cmpeq_epi8(v, t), a1 = _mm256_setzero_si256();
#define EXTMEM_PAIR(r)                                                          \
  a1 = _mm256_add_epi8(a1, _mm256_cmpeq_epi8(v, _mm256_alignr_epi8(t, v, r))); \
  a0 = _mm256_add_epi8(a0, _mm256_cmpeq_epi8(v, _mm256_alignr_epi8(v, t, r)));
    EXTMEM_PAIR(1) EXTMEM_PAIR(2) EXTMEM_PAIR(3) EXTMEM_PAIR(4) EXTMEM_PAIR(5) EXTMEM_PAIR(6) EXTMEM_PAIR(7)
    EXTMEM_PAIR(8) EXTMEM_PAIR(9) EXTMEM_PAIR(10) EXTMEM_PAIR(11) EXTMEM_PAIR(12) EXTMEM_PAIR(13) EXTMEM_PAIR(14)
    EXTMEM_PAIR(15)
#undef EXTMEM_PAIR
    const __m256i others = _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(a0, a1));  // c - 1 per byte
#define EXTMEM_MASK(k) \
  static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(others, _mm256_set1_epi8(static_cast<char>(k)))))
    EXTMEM_SUM_BY_COUNT(out[b], EXTMEM_MASK, log);
#undef EXTMEM_MASK
  }
}

// Two blocks per 64-byte vector: within each 16-byte lane by alignr of the
// vector with itself, and against the other lane of the same block by
// alignr of the vector with its lanes swapped pairwise.
__attribute__((target("avx512f,avx512bw,popcnt"))) void pairwise32_avx512(const std::uint8_t* p, std::size_t count,
                                                                          std::uint64_t* out,
                                                                          const std::uint64_t* log) {
  std::size_t b = 0;
  for (; b + 2 <= count; b += 2, p += 64) {
    const __m512i v = _mm512_loadu_si512(p);
    // Each block's first byte in all its 32 bytes: byte 0 of each lane, taken
    // from lanes 0 and 2 (the blocks' first lanes) for all four.
    const __m512i swapped = _mm512_shuffle_i64x2(v, v, 0xb1);  // lanes 1,0,3,2
    const __m512i first_of_block = _mm512_mask_blend_epi64(0xcc, _mm512_shuffle_epi8(v, _mm512_setzero_si512()),
                                                           _mm512_shuffle_epi8(swapped, _mm512_setzero_si512()));
    const __mmask64 same = _mm512_cmpeq_epi8_mask(v, first_of_block);
    const bool const_lo = static_cast<std::uint32_t>(same) == 0xffffffffu;
    const bool const_hi = static_cast<std::uint32_t>(same >> 32) == 0xffffffffu;
    if (const_lo && const_hi) {
      out[b] = out[b + 1] = 32 * log[32];
      continue;
    }
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i acc = _mm512_maskz_mov_epi8(_mm512_cmpeq_epi8_mask(v, swapped), ones);
#define EXTMEM_PAIR(r)                                                                                   \
  acc = _mm512_mask_add_epi8(acc, _mm512_cmpeq_epi8_mask(v, _mm512_alignr_epi8(v, v, r)), acc, ones);    \
  acc = _mm512_mask_add_epi8(acc, _mm512_cmpeq_epi8_mask(v, _mm512_alignr_epi8(swapped, swapped, r)), acc, ones);
    EXTMEM_PAIR(1) EXTMEM_PAIR(2) EXTMEM_PAIR(3) EXTMEM_PAIR(4) EXTMEM_PAIR(5) EXTMEM_PAIR(6) EXTMEM_PAIR(7)
    EXTMEM_PAIR(8) EXTMEM_PAIR(9) EXTMEM_PAIR(10) EXTMEM_PAIR(11) EXTMEM_PAIR(12) EXTMEM_PAIR(13) EXTMEM_PAIR(14)
    EXTMEM_PAIR(15)
#undef EXTMEM_PAIR
    for (int h = 0; h < 2; ++h) {
      if (h == 0 ? const_lo : const_hi) {
        out[b + h] = 32 * log[32];
        continue;
      }
#define EXTMEM_MASK(k) \
  static_cast<std::uint32_t>(_mm512_cmpeq_epi8_mask(acc, _mm512_set1_epi8(static_cast<char>(k))) >> (32 * h))
      EXTMEM_SUM_BY_COUNT(out[b + h], EXTMEM_MASK, log);
#undef EXTMEM_MASK
    }
  }
  if (b < count) pairwise32_avx2(p, count - b, out + b, log);
}
#undef EXTMEM_SUM_BY_COUNT
#endif

}  // namespace

EntropySums::EntropySums(std::size_t block, ScanIsa isa)
    : block_(block),
      isa_(isa),
      log2_block_(std::log2(static_cast<double>(block))),
      per_unit_(1.0 / (kUnit * static_cast<double>(block))) {
  auto xlogx = [](std::size_t c) { return c == 0 ? 0.0 : static_cast<double>(c) * std::log2(static_cast<double>(c)); };
  step_.resize(block + 1);
  whole_.resize(block + 1);
  log_.resize(block + 1);
  for (std::size_t c = 0; c <= block; ++c) {
    // The step as the difference of the rounded wholes, so the steps of a
    // count add up to its whole exactly: one rounding per distinct value.
    whole_[c] = units(xlogx(c));
    if (c > 0) step_[c - 1] = whole_[c] - whole_[c - 1];
    log_[c] = c == 0 ? 0 : units(std::log2(static_cast<double>(c)));
  }
}

void EntropySums::sums(const std::uint8_t* p, std::size_t count, std::uint64_t* out) const {
#if defined(__x86_64__)
  if (block_ == 32 && isa_ == ScanIsa::avx512) return pairwise32_avx512(p, count, out, log_.data());
  if (block_ == 32 && isa_ == ScanIsa::avx2) return pairwise32_avx2(p, count, out, log_.data());
#endif
  std::uint32_t counts[256] = {};
  for (std::size_t b = 0; b < count; ++b, p += block_)
    out[b] = constant_block(p, block_) ? whole_[block_] : histogram_sum(p, block_, step_.data(), counts);
}

}  // namespace extmem::memtools::detail
