// Unit tests of the kernels behind `extmem scan --entropy` and `--twins`
// (entropy_kernel.h, block_scan_bytes.h): every instruction-set path this CPU
// runs against the exact answer, bit for bit, on random blocks and on blocks
// made to sit where a shortcut could go wrong (counts that are powers of two
// or not, values in every quarter of the byte range, sums equal up to the
// order of their terms, runs across batch and piece borders).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "extmem/memtools/block_scan.h"
#include "memtools/block_scan_bytes.h"
#include "memtools/byte_search.h"
#include "memtools/entropy_kernel.h"

namespace {

using namespace extmem::memtools;
using detail::ScanIsa;

std::vector<ScanIsa> isas() {
  std::vector<ScanIsa> out = {ScanIsa::sse2};
  if (detail::scan_isa() >= ScanIsa::avx2) out.push_back(ScanIsa::avx2);
  if (detail::scan_isa() >= ScanIsa::avx512) out.push_back(ScanIsa::avx512);
  return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Blocks of `block` bytes: random ones over alphabets of 2 to 256 values, and
// made ones: constant, all distinct, pairs only, one value 3 or 31 times,
// values spread over 0..255 (all four 64-value words of a bitmap), the same
// counts at shuffled places (equal sums, terms in another order).
std::vector<std::uint8_t> blocks_for(std::size_t block, std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> d(block * count);
  for (std::size_t b = 0; b < count; ++b) {
    std::uint8_t* p = d.data() + b * block;
    const unsigned kind = static_cast<unsigned>(b % 9);
    for (std::size_t i = 0; i < block; ++i) {
      switch (kind) {
        case 0: p[i] = static_cast<std::uint8_t>(rng() % (2 + rng() % 255)); break;
        case 1: p[i] = static_cast<std::uint8_t>(rng() & 0x3f); break;
        case 2: p[i] = static_cast<std::uint8_t>(b); break;                       // constant
        case 3: p[i] = static_cast<std::uint8_t>(i * 7 + b); break;               // all distinct up to 256
        case 4: p[i] = static_cast<std::uint8_t>((i / 2) * 37 + b); break;        // pairs (powers of two)
        case 5: p[i] = static_cast<std::uint8_t>(i < 3 ? 0xc0 : (i * 5) ^ 0x55); break;  // one value three times
        case 6: p[i] = static_cast<std::uint8_t>(i + 1 < block ? 0xff : 0x01); break;    // one value block-1 times
        case 7: p[i] = static_cast<std::uint8_t>((rng() % 4) * 64 + rng() % 3); break;   // few values, every quarter
        default: p[i] = static_cast<std::uint8_t>(rng() % 5 == 0 ? 255 - rng() % 3 : rng() % 3); break;
      }
    }
    if (kind == 8 && b >= 1) {
      // The previous block's bytes shuffled: the same counts, another order of values.
      std::memcpy(p, p - block, block);
      std::shuffle(p, p + block, rng);
      for (std::size_t i = 0; i < block; ++i) p[i] = static_cast<std::uint8_t>(p[i] ^ 0x80);
    }
  }
  return d;
}

TEST(ExactEntropy, IsByteEntropyBitForBitWithAndWithoutTheKernelsCounts) {
  for (std::size_t block : {8u, 32u, 100u, 256u, 4096u}) {
    const std::size_t count = block <= 256 ? 900 : 60;
    const std::vector<std::uint8_t> d = blocks_for(block, count, static_cast<std::uint32_t>(block));
    for (ScanIsa isa : isas()) {
      const detail::EntropySums fast(block, isa);
      std::vector<std::uint64_t> sums(count);
      std::vector<std::uint8_t> exact(count), counts(32 * count, 0);
      fast.sums(d.data(), count, sums.data(), exact.data(), counts.data());
      detail::ExactEntropy with(block), without(block);
      for (std::size_t b = 0; b < count; ++b) {
        const std::uint8_t* p = d.data() + b * block;
        const double want = byte_entropy(p, block);
        EXPECT_TRUE(same_bits(without(p), want)) << "block " << block << " at " << b;
        if (fast.has_counts())
          EXPECT_TRUE(same_bits(with(p, counts.data() + 32 * b), want)) << "block " << block << " isa " << int(isa) << " at " << b;
        // And again without counts after a call with them: the scratch stays clean.
        EXPECT_TRUE(same_bits(with(p), want)) << "block " << block << " at " << b;
      }
    }
  }
}

TEST(EntropySums, TheExactFlagAndTheCountsAreRightOnEveryPath) {
  const std::size_t block = 32, count = 2000;
  const std::vector<std::uint8_t> d = blocks_for(block, count, 77);
  std::vector<std::uint64_t> reference;
  for (ScanIsa isa : isas()) {
    const detail::EntropySums fast(block, isa);
    std::vector<std::uint64_t> sums(count);
    std::vector<std::uint8_t> exact(count, 9), counts(32 * count, 0);
    // Odd counts and starts: the two-block kernel's single last block, and unaligned loads.
    fast.sums(d.data(), 1, sums.data(), exact.data(), counts.data());
    fast.sums(d.data() + block, count - 1, sums.data() + 1, exact.data() + 1, counts.data() + 32);
    for (std::size_t b = 0; b < count; ++b) {
      const std::uint8_t* p = d.data() + b * block;
      bool powers_of_two = true;
      for (std::size_t i = 0; i < block; ++i) {
        const auto c = static_cast<unsigned>(std::count(p, p + block, p[i]));
        powers_of_two = powers_of_two && (c & (c - 1)) == 0;
        if (fast.has_counts()) ASSERT_EQ(counts[32 * b + i], c) << "isa " << int(isa) << " block " << b << " byte " << i;
      }
      ASSERT_LE(exact[b], 1);
      if (exact[b] == 1) {
        EXPECT_TRUE(powers_of_two);
        EXPECT_TRUE(same_bits(fast.bits(sums[b]), byte_entropy(p, block))) << "isa " << int(isa) << " block " << b;
      }
      // The vector paths say so wherever it is so (the histogram one never does).
      if (fast.has_counts()) EXPECT_EQ(exact[b], powers_of_two ? 1 : 0) << "isa " << int(isa) << " block " << b;
    }
    // The two vector kernels sum the same terms: the same sums.
    if (fast.has_counts()) {
      if (reference.empty()) reference = sums;
      else EXPECT_EQ(sums, reference) << "isa " << int(isa);
    }
  }
}

// The runs from every block's byte_entropy: maximal stretches of blocks at or
// above the threshold, with their lowest and highest value.
std::vector<EntropyRun> runs_from_exact(const std::vector<std::uint8_t>& d, const EntropyQuery& q) {
  std::vector<double> h;
  for (std::size_t at = 0; at + q.block <= d.size(); at += q.block) h.push_back(byte_entropy(d.data() + at, q.block));
  auto reaches = [&](std::size_t b) { return h[b] + 1e-12 >= q.bits; };
  std::vector<EntropyRun> out;
  for (std::size_t b = 0; b < h.size();) {
    if (!reaches(b)) {
      ++b;
      continue;
    }
    std::size_t e = b;
    double lo = h[b], hi = h[b];
    for (; e < h.size() && reaches(e); ++e) lo = std::min(lo, h[e]), hi = std::max(hi, h[e]);
    out.push_back({b * q.block, (e - b) * q.block, lo, hi});
    b = e;
  }
  return out;
}

TEST(EntropyScan, EveryPathGivesTheExactRunsOnMadeBlocks) {
  // 3 MiB: batch borders (256 blocks) everywhere.
  std::vector<std::uint8_t> d = blocks_for(32, (3 << 20) / 32, 5);
  // A run of blocks that reach the threshold across three batch borders, and
  // blocks exactly on thresholds that a power-of-two block sums to (4.875:
  // four pairs; 4.5: eight pairs) next to others just below.
  for (std::size_t at = (1 << 20) - 32 * 300; at < (1 << 20) + 32 * 300; at += 32)
    for (int i = 0; i < 32; ++i) d[at + i] = static_cast<std::uint8_t>(i * 3 + at / 32);
  for (std::size_t at = 8192 - 64; at < 8192 + 64 * 32; at += 64) {
    for (int i = 0; i < 32; ++i) d[at + i] = static_cast<std::uint8_t>(i < 8 ? 0x40 + i / 2 : 0x50 + i);
    for (int i = 0; i < 32; ++i) d[at + 32 + i] = static_cast<std::uint8_t>(i < 16 ? 0x40 + i / 2 : 0x50 + i);
  }
  for (double bits : {4.875, 4.5, 2.0}) {
    const EntropyQuery q{bits, 32};
    const std::vector<EntropyRun> want = runs_from_exact(d, q);
    for (ScanIsa isa : isas()) {
      std::vector<EntropyRun> got;
      detail::scan_entropy_bytes(d.data(), d.size(), q, [&](const EntropyRun& r) {
        got.push_back(r);
        return true;
      }, nullptr, isa);
      ASSERT_EQ(got.size(), want.size()) << bits << " isa " << int(isa);
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].offset, want[i].offset) << bits << " isa " << int(isa) << " run " << i;
        ASSERT_EQ(got[i].bytes, want[i].bytes) << bits << " isa " << int(isa) << " run " << i;
        EXPECT_TRUE(same_bits(got[i].min_bits, want[i].min_bits)) << got[i].min_bits << " " << want[i].min_bits;
        EXPECT_TRUE(same_bits(got[i].max_bits, want[i].max_bits)) << got[i].max_bits << " " << want[i].max_bits;
      }
    }
  }
}

// Twin groups by content, the naive way: offsets of each non-constant
// content seen at least twice, largest group first, then by first offset.
std::vector<std::vector<std::uint64_t>> naive_twins(const std::vector<std::uint8_t>& d, std::size_t block) {
  std::map<std::vector<std::uint8_t>, std::vector<std::uint64_t>> by_content;
  for (std::size_t at = 0; at + block <= d.size(); at += block) {
    const std::vector<std::uint8_t> c(d.begin() + static_cast<std::ptrdiff_t>(at), d.begin() + static_cast<std::ptrdiff_t>(at + block));
    if (std::all_of(c.begin(), c.end(), [&](std::uint8_t x) { return x == c[0]; })) continue;
    by_content[c].push_back(at);
  }
  std::vector<std::vector<std::uint64_t>> out;
  for (auto& [c, offs] : by_content)
    if (offs.size() >= 2) out.push_back(offs);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() > b.size() : a.front() < b.front();
  });
  return out;
}

TEST(Twins, EveryPathGroupsAlikeAndPrintsTheSameHash) {
  for (std::size_t block : {64u, 256u, 4096u}) {
    std::mt19937 rng(static_cast<std::uint32_t>(block));
    const std::size_t count = 600;
    std::vector<std::uint8_t> d(block * count);
    for (auto& x : d) x = static_cast<std::uint8_t>(rng());
    std::vector<std::uint8_t> base(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(block));
    for (std::size_t b = 1; b < count; ++b) {
      std::uint8_t* p = d.data() + b * block;
      switch (b % 8) {
        case 0: std::memcpy(p, base.data(), block); break;                   // a twin of block 0
        case 1: std::memcpy(p, base.data(), block), p[block - 1] ^= 1; break;  // one bit off, at the end
        case 2: std::memcpy(p, base.data(), block), p[0] ^= 0x80; break;       // one bit off, at the start
        case 3:  // block 0 with its first two 32-byte chunks swapped
          std::memcpy(p, base.data() + 32, 32), std::memcpy(p + 32, base.data(), 32);
          std::memcpy(p + 64, base.data() + 64, block - 64);
          break;
        case 4: std::memset(p, static_cast<int>(b % 3), block); break;  // constant: left out
        case 5: std::memcpy(p, d.data() + (b - 4) * block, block); break;  // a twin of a near block
        default: break;  // random
      }
    }
    const auto want = naive_twins(d, block);
    std::vector<std::uint64_t> hashes;
    for (ScanIsa isa : isas()) {
      const TwinResult r = detail::find_twins_bytes(d.data(), d.size(), TwinQuery{block, 0}, nullptr, isa);
      ASSERT_EQ(r.groups.size(), want.size()) << "block " << block << " isa " << int(isa);
      std::vector<std::uint64_t> got_hashes;
      for (std::size_t g = 0; g < want.size(); ++g) {
        EXPECT_EQ(r.groups[g].offsets, want[g]) << "block " << block << " isa " << int(isa) << " group " << g;
        got_hashes.push_back(r.groups[g].hash);
      }
      if (hashes.empty()) hashes = got_hashes;
      else EXPECT_EQ(got_hashes, hashes) << "block " << block << " isa " << int(isa);
    }
  }
}

// Blocks of 1K and more are keyed by a sample of their bytes first: blocks
// that differ only outside it (a counter in one word, a byte in the last
// stripe but not its last 32 bytes, a page mostly zero) must still be told
// apart, and their twins grouped, on every path.
TEST(Twins, BlocksAlikeInTheirSamplesAreToldApart) {
  for (std::size_t block : {1024u, 4096u, 65536u}) {
    std::mt19937 rng(static_cast<std::uint32_t>(block) + 7);
    const std::size_t count = 300;
    std::vector<std::uint8_t> d(block * count);
    std::vector<std::uint8_t> base(block);
    for (auto& x : base) x = static_cast<std::uint8_t>(rng());
    for (std::size_t b = 0; b < count; ++b) {
      std::uint8_t* p = d.data() + b * block;
      const std::size_t variant = (b / 3) % 40;  // each variant three times, in runs
      switch (b % 4) {
        case 0:  // the base with a counter in one word of the second chunk (never sampled)
          std::memcpy(p, base.data(), block);
          std::memcpy(p + 40, &variant, sizeof variant);
          break;
        case 1:  // the base with one byte changed just before the last 32
          std::memcpy(p, base.data(), block);
          p[block - 33] = static_cast<std::uint8_t>(variant);
          break;
        case 2:  // mostly zero: a sample that looks constant
          std::memset(p, 0, block);
          p[100] = static_cast<std::uint8_t>(1 + variant % 5);
          break;
        default:  // constant (left out), or the base itself
          if (variant % 2 == 0) std::memset(p, 0x5a, block);
          else std::memcpy(p, base.data(), block);
          break;
      }
    }
    const auto want = naive_twins(d, block);
    ASSERT_FALSE(want.empty());
    for (ScanIsa isa : isas()) {
      const TwinResult r = detail::find_twins_bytes(d.data(), d.size(), TwinQuery{block, 0}, nullptr, isa);
      ASSERT_EQ(r.groups.size(), want.size()) << "block " << block << " isa " << int(isa);
      for (std::size_t g = 0; g < want.size(); ++g)
        EXPECT_EQ(r.groups[g].offsets, want[g]) << "block " << block << " isa " << int(isa) << " group " << g;
      std::size_t distinct = 0, constant = 0;
      {
        std::map<std::vector<std::uint8_t>, int> contents;
        for (std::size_t at = 0; at < d.size(); at += block) {
          const std::vector<std::uint8_t> c(d.begin() + static_cast<std::ptrdiff_t>(at),
                                            d.begin() + static_cast<std::ptrdiff_t>(at + block));
          if (std::all_of(c.begin(), c.end(), [&](std::uint8_t x) { return x == c[0]; })) ++constant;
          else contents[c] = 1;
        }
        distinct = contents.size();
      }
      EXPECT_EQ(r.distinct, distinct) << "block " << block << " isa " << int(isa);
      EXPECT_EQ(r.constant_blocks, constant) << "block " << block << " isa " << int(isa);
    }
  }
}

}  // namespace
