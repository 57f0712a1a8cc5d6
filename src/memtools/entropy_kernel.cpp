#include "memtools/entropy_kernel.h"

#include <algorithm>
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
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32(), which its
// own -Wmaybe-uninitialized then reports at every use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The pairwise kernels: for each byte of a 32-byte block, how many of the
// other 31 bytes equal it (c - 1, 0 to 31), then S = sum over the bytes of
// log_[c], looked up byte by byte in five planes (byte j of each 40-bit
// entry) and summed by vpsadbw, each plane's sum shifted to its place.
// exact: whether every c is a power of two ((c & (c - 1)) == 0 for each byte).

__attribute__((target("avx2,popcnt"))) void pairwise32_avx2(const std::uint8_t* p, std::size_t count,
                                                             std::uint64_t* out, std::uint8_t* exact,
                                                             std::uint8_t* counts, const std::uint8_t* planes) {
  const __m256i ones = _mm256_set1_epi8(1), fifteen = _mm256_set1_epi8(15);
  __m256i lo_tab[5], hi_tab[5];
  for (int j = 0; j < 5; ++j) {
    lo_tab[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + 32 * j)));
    hi_tab[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + 32 * j + 16)));
  }
  for (std::size_t b = 0; b < count; ++b, p += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
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
    const __m256i high = _mm256_cmpgt_epi8(others, fifteen);  // c - 1 of 16 to 31: the second half of the table
    __m256i total = _mm256_setzero_si256();
    for (int j = 0; j < 5; ++j) {
      const __m256i plane = _mm256_blendv_epi8(_mm256_shuffle_epi8(lo_tab[j], others),
                                               _mm256_shuffle_epi8(hi_tab[j], others), high);
      total = _mm256_add_epi64(total, _mm256_slli_epi64(_mm256_sad_epu8(plane, _mm256_setzero_si256()), 8 * j));
    }
    const __m128i half = _mm_add_epi64(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    out[b] = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_add_epi64(half, _mm_unpackhi_epi64(half, half))));
    const __m256i c = _mm256_add_epi8(others, ones);
    if (exact != nullptr)
      exact[b] = _mm256_testz_si256(c, others) ? 1 : 0;
    if (counts != nullptr) _mm256_storeu_si256(reinterpret_cast<__m256i*>(counts + 32 * b), c);
  }
}

// Two blocks per 64-byte vector: within each 16-byte lane by alignr of the
// vector with itself, and against the other lane of the same block by
// alignr of the vector with its lanes swapped pairwise.
__attribute__((target("avx512f,avx512bw,popcnt"))) void pairwise32_avx512(const std::uint8_t* p, std::size_t count,
                                                                          std::uint64_t* out, std::uint8_t* exact,
                                                                          std::uint8_t* counts,
                                                                          const std::uint8_t* planes,
                                                                          std::uint64_t constant_sum) {
  const __m512i ones = _mm512_set1_epi8(1), fifteen = _mm512_set1_epi8(15);
  __m512i lo_tab[5], hi_tab[5];
  for (int j = 0; j < 5; ++j) {
    lo_tab[j] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + 32 * j)));
    hi_tab[j] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + 32 * j + 16)));
  }
  std::size_t b = 0;
  for (; b + 2 <= count; b += 2, p += 64) {
    const __m512i v = _mm512_loadu_si512(p);
    // Each block's first byte in all its 32 bytes: byte 0 of each lane, taken
    // from lanes 0 and 2 (the blocks' first lanes) for all four.
    const __m512i swapped = _mm512_shuffle_i64x2(v, v, 0xb1);  // lanes 1,0,3,2
    const __m512i first_of_block = _mm512_mask_blend_epi64(0xcc, _mm512_shuffle_epi8(v, _mm512_setzero_si512()),
                                                           _mm512_shuffle_epi8(swapped, _mm512_setzero_si512()));
    if (_mm512_cmpeq_epi8_mask(v, first_of_block) == ~__mmask64{0}) {  // two constant blocks (zero pages)
      out[b] = out[b + 1] = constant_sum;
      if (exact != nullptr) exact[b] = exact[b + 1] = 1;
      if (counts != nullptr) _mm512_storeu_si512(counts + 32 * b, _mm512_set1_epi8(32));
      continue;
    }
    __m512i acc = _mm512_maskz_mov_epi8(_mm512_cmpeq_epi8_mask(v, swapped), ones);
#define EXTMEM_PAIR(r)                                                                                   \
  acc = _mm512_mask_add_epi8(acc, _mm512_cmpeq_epi8_mask(v, _mm512_alignr_epi8(v, v, r)), acc, ones);    \
  acc = _mm512_mask_add_epi8(acc, _mm512_cmpeq_epi8_mask(v, _mm512_alignr_epi8(swapped, swapped, r)), acc, ones);
    EXTMEM_PAIR(1) EXTMEM_PAIR(2) EXTMEM_PAIR(3) EXTMEM_PAIR(4) EXTMEM_PAIR(5) EXTMEM_PAIR(6) EXTMEM_PAIR(7)
    EXTMEM_PAIR(8) EXTMEM_PAIR(9) EXTMEM_PAIR(10) EXTMEM_PAIR(11) EXTMEM_PAIR(12) EXTMEM_PAIR(13) EXTMEM_PAIR(14)
    EXTMEM_PAIR(15)
#undef EXTMEM_PAIR
    // acc: c - 1 per byte.
    const __mmask64 high = _mm512_cmpgt_epu8_mask(acc, fifteen);
    __m512i total = _mm512_setzero_si512();
    for (int j = 0; j < 5; ++j) {
      const __m512i plane = _mm512_mask_shuffle_epi8(_mm512_shuffle_epi8(lo_tab[j], acc), high, hi_tab[j], acc);
      total = _mm512_add_epi64(total, _mm512_slli_epi64(_mm512_sad_epu8(plane, _mm512_setzero_si512()), 8 * j));
    }
    // Qwords 0-3 are the first block's, 4-7 the second's.
    const __m512i pairs = _mm512_add_epi64(total, _mm512_shuffle_i64x2(total, total, 0xb1));
    const __m512i sums = _mm512_add_epi64(pairs, _mm512_unpackhi_epi64(pairs, pairs));
    out[b] = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm512_castsi512_si128(sums)));
    out[b + 1] = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm512_extracti32x4_epi32(sums, 2)));
    const __m512i c = _mm512_add_epi8(acc, ones);
    if (exact != nullptr) {
      const __mmask64 odd = _mm512_test_epi8_mask(c, acc);  // bytes whose count is not a power of two
      exact[b] = static_cast<std::uint32_t>(odd) == 0 ? 1 : 0;
      exact[b + 1] = (odd >> 32) == 0 ? 1 : 0;
    }
    if (counts != nullptr) _mm512_storeu_si512(counts + 32 * b, c);
  }
  if (b < count) pairwise32_avx2(p, count - b, out + b, exact != nullptr ? exact + b : nullptr,
                                 counts != nullptr ? counts + 32 * b : nullptr, planes);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
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
  if (block == 32)
    for (int j = 0; j < 5; ++j)
      for (std::size_t k = 0; k < 32; ++k) planes_[32 * j + k] = static_cast<std::uint8_t>(log_[k + 1] >> (8 * j));
}

bool EntropySums::has_counts() const noexcept {
#if defined(__x86_64__)
  return block_ == 32 && isa_ >= ScanIsa::avx2;
#else
  return false;
#endif
}

void EntropySums::sums(const std::uint8_t* p, std::size_t count, std::uint64_t* out, std::uint8_t* exact,
                       std::uint8_t* counts) const {
#if defined(__x86_64__)
  if (block_ == 32 && isa_ == ScanIsa::avx512)
    return pairwise32_avx512(p, count, out, exact, counts, planes_, whole_[32]);
  if (block_ == 32 && isa_ == ScanIsa::avx2) return pairwise32_avx2(p, count, out, exact, counts, planes_);
#endif
  (void)counts;
  std::uint32_t seen[256] = {};
  for (std::size_t b = 0; b < count; ++b, p += block_) {
    out[b] = constant_block(p, block_) ? whole_[block_] : histogram_sum(p, block_, step_.data(), seen);
    if (exact != nullptr) exact[b] = 0;
  }
}

ExactEntropy::ExactEntropy(std::size_t block)
    : block_(block),
      log2_block_(std::log2(static_cast<double>(block))),
      size_(static_cast<double>(block)),
      xlogx_(block + 1, 0.0),
      seen_(256, 0),
      given_(256, 0) {
  // As byte_entropy writes the term, so the same double.
  for (std::size_t c = 1; c <= block; ++c)
    xlogx_[c] = static_cast<double>(c) * std::log2(static_cast<double>(c));
}

double ExactEntropy::operator()(const std::uint8_t* p, const std::uint8_t* counts) {
  // The values that occur more than once, a bit each in four words (kept in
  // registers: a store per byte into one word would chain every byte on the
  // one before), and each one's count in seen_.
  std::uint64_t q0 = 0, q1 = 0, q2 = 0, q3 = 0;
  auto mark = [&](std::uint8_t v) {
    const std::uint64_t bit = std::uint64_t{1} << (v & 63);
    const unsigned q = v >> 6;
    q0 |= q == 0 ? bit : 0;
    q1 |= q == 1 ? bit : 0;
    q2 |= q == 2 ? bit : 0;
    q3 |= q == 3 ? bit : 0;
  };
  const bool given = counts != nullptr && block_ == 32;
  std::uint32_t* seen = given ? given_.data() : seen_.data();  // given_ needs no zeros: only marked values are read
  if (given) {
    // The bytes whose count is 2 or more, a bit each: visited without a
    // branch per byte (which half the bytes of noise would mispredict).
    std::uint32_t repeated = 0;
#if defined(__x86_64__)
    const __m128i one = _mm_set1_epi8(1);
    for (int h = 0; h < 2; ++h) {
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + 16 * h));
      repeated |= static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpgt_epi8(c, one))) << (16 * h);
    }
#else
    for (std::size_t i = 0; i < 32; ++i) repeated |= static_cast<std::uint32_t>(counts[i] >= 2) << i;
#endif
    for (; repeated != 0; repeated &= repeated - 1) {
      const unsigned i = static_cast<unsigned>(__builtin_ctz(repeated));
      seen[p[i]] = counts[i];
      mark(p[i]);
    }
  } else {
    for (std::size_t i = 0; i < block_; ++i) ++seen[p[i]];
    for (std::size_t i = 0; i < block_; ++i)
      if (seen[p[i]] >= 2) mark(p[i]);
  }
  double sum = 0;
  const std::uint64_t words[4] = {q0, q1, q2, q3};
  for (unsigned w = 0; w < 4; ++w)
    for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1)
      sum += xlogx_[seen[w * 64 + static_cast<unsigned>(__builtin_ctzll(bits))]];
  // seen_ back to zeros: the values of the block, or all when that is fewer stores.
  if (!given) {
    if (block_ <= 256) {
      for (std::size_t i = 0; i < block_; ++i) seen[p[i]] = 0;
    } else {
      std::fill(seen_.begin(), seen_.end(), 0u);
    }
  }
  return std::max(0.0, log2_block_ - sum / size_);
}

}  // namespace extmem::memtools::detail
