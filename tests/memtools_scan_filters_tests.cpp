// Unit tests of the scan kernels made for memory speed (byte_search.h,
// entropy_kernel.h, parallel_scan.h's scan_read, block_scan_bytes.h): every
// instruction-set path against a naive answer, with hits at the start and end
// of the buffer, across vector, read and piece boundaries, and overlapping.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "extmem/memtools/block_scan.h"
#include "extmem/memtools/scan_query.h"
#include "extmem/memtools/scanner.h"
#include "memtools/block_scan_bytes.h"
#include "memtools/byte_search.h"
#include "memtools/entropy_kernel.h"
#include "memtools/parallel_scan.h"

namespace {

using namespace extmem::memtools;
using detail::ScanIsa;
namespace fs = std::filesystem;

// The paths this CPU can run (every one at least SSE2).
std::vector<ScanIsa> isas() {
  std::vector<ScanIsa> out = {ScanIsa::sse2};
  if (detail::scan_isa() >= ScanIsa::avx2) out.push_back(ScanIsa::avx2);
  if (detail::scan_isa() >= ScanIsa::avx512) out.push_back(ScanIsa::avx512);
  return out;
}

std::vector<std::size_t> naive_words(const std::vector<std::uint8_t>& hay, std::size_t from, const std::uint8_t* word,
                                     std::size_t w) {
  std::vector<std::size_t> out;
  for (std::size_t i = from; i + w <= hay.size(); i += w)
    if (std::memcmp(hay.data() + i, word, w) == 0) out.push_back(i);
  return out;
}

TEST(WordSearcher, AgreesWithANaiveAlignedSearchOnEveryPath) {
  std::mt19937 rng(3);
  for (ScanIsa isa : isas()) {
    for (std::size_t w : {2u, 4u, 8u}) {
      for (int round = 0; round < 300; ++round) {
        std::vector<std::uint8_t> hay(1 + rng() % 200);
        // A tiny alphabet: whole-word matches, partial matches and words of
        // one repeated byte (overlapping occurrences) are all frequent.
        for (auto& b : hay) b = static_cast<std::uint8_t>(rng() % 4 == 0 ? 0 : 0x61 + rng() % 2);
        std::vector<std::uint8_t> word(w);
        for (auto& b : word) b = static_cast<std::uint8_t>(rng() % 4 == 0 ? 0 : 0x61 + rng() % 2);
        if (round % 10 == 0) std::fill(word.begin(), word.end(), 0), std::fill(hay.begin(), hay.end(), 0);
        // The word at the very start and the very end of the buffer.
        if (round % 7 == 0 && hay.size() >= w) std::memcpy(hay.data(), word.data(), w);
        if (round % 5 == 0 && hay.size() >= w) std::memcpy(hay.data() + hay.size() - w, word.data(), w);
        const std::size_t from = rng() % (hay.size() + 1);  // any start, aligned in memory or not
        const detail::WordSearcher s(word, isa);
        std::vector<std::size_t> got;
        const std::uint8_t* end = hay.data() + hay.size();
        for (const std::uint8_t* at = hay.data() + from;;) {
          const std::uint8_t* f = s.find(at, end);
          if (f == end) break;
          got.push_back(static_cast<std::size_t>(f - hay.data()));
          at = f + w;
        }
        EXPECT_EQ(got, naive_words(hay, from, word.data(), w)) << "isa " << int(isa) << " width " << w << " round " << round;
      }
    }
  }
}

TEST(ByteSearcher, EveryPathAgreesWithANaiveSearchIncludingOverlaps) {
  std::mt19937 rng(9);
  for (ScanIsa isa : isas()) {
    for (int round = 0; round < 300; ++round) {
      std::vector<std::uint8_t> hay(1 + rng() % 300);
      for (auto& b : hay) b = static_cast<std::uint8_t>(rng() % 3 == 0 ? 0 : 0x61 + rng() % 2);
      std::vector<std::uint8_t> needle(1 + rng() % 6);
      for (auto& b : needle) b = static_cast<std::uint8_t>(rng() % 3 == 0 ? 0 : 0x61 + rng() % 2);
      if (round % 9 == 0) std::fill(needle.begin(), needle.end(), 0x61), std::fill(hay.begin(), hay.end(), 0x61);
      if (round % 7 == 0 && hay.size() >= needle.size()) std::memcpy(hay.data(), needle.data(), needle.size());
      if (round % 5 == 0 && hay.size() >= needle.size())
        std::memcpy(hay.data() + hay.size() - needle.size(), needle.data(), needle.size());
      const detail::ByteSearcher s(needle, isa);
      std::vector<std::size_t> got, want;
      for (const std::uint8_t* at = hay.data();;) {
        const std::uint8_t* f = s.find(at, hay.data() + hay.size());
        if (f == hay.data() + hay.size()) break;
        got.push_back(static_cast<std::size_t>(f - hay.data()));
        at = f + 1;  // overlapping occurrences too
      }
      for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
        if (std::memcmp(hay.data() + i, needle.data(), needle.size()) == 0) want.push_back(i);
      EXPECT_EQ(got, want) << "isa " << int(isa) << " round " << round;
    }
  }
}

// The offsets from `base` of what `s` finds in [base + from, end), searching
// on `step` bytes after each find (1: overlapping occurrences too).
template <class Searcher>
std::vector<std::size_t> all_found(const Searcher& s, const std::uint8_t* base, const std::uint8_t* end,
                                   std::size_t from, std::size_t step) {
  std::vector<std::size_t> got;
  for (const std::uint8_t* at = base + from;;) {
    const std::uint8_t* f = s.find(at, end);
    if (f == end) break;
    got.push_back(static_cast<std::size_t>(f - base));
    at = f + step;
  }
  return got;
}

// The wide steps of the vector paths (64 and 128 bytes a step on AVX-512):
// needles of 1 to 40 bytes placed just before, on and after each step's
// edge, at the very end, with unaligned starts, and of one repeated byte.
TEST(ByteSearcher, EveryPathFindsNeedlesAtTheEdgesOfItsSteps) {
  std::mt19937 rng(21);
  for (ScanIsa isa : isas()) {
    for (std::size_t n : {1u, 2u, 3u, 6u, 17u, 40u}) {
      for (int round = 0; round < 60; ++round) {
        std::vector<std::uint8_t> hay(n + rng() % 700);
        for (auto& b : hay) b = static_cast<std::uint8_t>(rng() & 0x3f);  // never the needle's bytes below
        std::vector<std::uint8_t> needle(n);
        for (auto& b : needle) b = static_cast<std::uint8_t>(0x80 | (rng() & 0x7f));
        if (round % 6 == 0) std::fill(needle.begin(), needle.end(), 0xc3);
        for (std::size_t edge : {63u, 64u, 65u, 127u, 128u, 129u, 255u, 256u}) {
          for (std::size_t at : {edge - std::min(edge, n), edge - std::min(edge, n) + 1, edge})
            if (at + n <= hay.size() && rng() % 3 == 0) std::memcpy(hay.data() + at, needle.data(), n);
        }
        std::memcpy(hay.data() + hay.size() - n, needle.data(), n);  // at the very end
        const std::size_t from = rng() % 8;                             // unaligned starts
        std::vector<std::size_t> want;
        for (std::size_t i = from; i + n <= hay.size(); ++i)
          if (std::memcmp(hay.data() + i, needle.data(), n) == 0) want.push_back(i);
        const std::size_t from_ok = std::min(from, hay.size());
        EXPECT_EQ(all_found(detail::ByteSearcher(needle, isa), hay.data(), hay.data() + hay.size(), from_ok, 1), want)
            << "isa " << int(isa) << " n " << n << " round " << round;
      }
    }
  }
}

// The aligned search's wide steps: words just before, on and after 64- and
// 128-byte edges, at the very end, and starts not aligned in memory.
TEST(WordSearcher, EveryPathFindsWordsAtTheEdgesOfItsSteps) {
  std::mt19937 rng(22);
  for (ScanIsa isa : isas()) {
    for (std::size_t w : {2u, 4u, 8u}) {
      for (int round = 0; round < 60; ++round) {
        std::vector<std::uint8_t> hay(w * (1 + rng() % 100) + rng() % w);
        for (auto& b : hay) b = static_cast<std::uint8_t>(rng() & 0x3f);
        std::vector<std::uint8_t> word(w, 0xc3);
        if (round % 2 == 0) word[w - 1] = 0x01;  // a lone byte differs: no whole-word match
        for (std::size_t edge : {64u, 128u, 192u, 256u})
          for (std::size_t at : {edge - w, edge, edge + w})
            if (at + w <= hay.size() && rng() % 2 == 0) std::memcpy(hay.data() + at, word.data(), w);
        const std::size_t last = (hay.size() - w) / w * w;
        std::memcpy(hay.data() + last, word.data(), w);  // the last aligned word
        const std::size_t offset = 1 + rng() % 7;          // the buffer itself unaligned in memory
        std::vector<std::uint8_t> shifted(offset, 0);
        shifted.insert(shifted.end(), hay.begin(), hay.end());
        EXPECT_EQ(all_found(detail::WordSearcher(word, isa), shifted.data() + offset, shifted.data() + shifted.size(), 0, w),
                  naive_words(hay, 0, word.data(), w))
            << "isa " << int(isa) << " width " << w << " round " << round;
      }
    }
  }
}

// Bytes like the test image's: noise below 0x40 with zero pages, plus blocks
// of few distinct values and of all-distinct ones.
std::vector<std::uint8_t> noise(std::size_t size, std::uint32_t seed) {
  std::vector<std::uint8_t> d(size);
  std::mt19937 rng(seed);
  for (std::size_t i = 0; i < size; ++i) d[i] = (i / 4096) % 4 == 0 ? 0 : static_cast<std::uint8_t>(rng() & 0x3f);
  for (std::size_t i = 8192; i < std::min(size, std::size_t{12288}); ++i) d[i] = static_cast<std::uint8_t>(rng() % 3);
  for (std::size_t i = 12288; i < std::min(size, std::size_t{16384}); ++i) d[i] = static_cast<std::uint8_t>(i * 7);
  return d;
}

TEST(EntropySums, EveryPathIsWithinTheBoundOfTheExactEntropy) {
  const std::vector<std::uint8_t> d = noise(1 << 16, 4);
  for (std::size_t block : {8u, 32u, 100u, 256u, 4096u}) {
    for (ScanIsa isa : isas()) {
      const detail::EntropySums fast(block, isa);
      const std::size_t blocks = d.size() / block;
      std::vector<std::uint64_t> sums(blocks);
      fast.sums(d.data(), blocks, sums.data());
      for (std::size_t b = 0; b < blocks; ++b)
        ASSERT_LE(std::fabs(fast.bits(sums[b]) - byte_entropy(d.data() + b * block, block)), detail::kEntropyError)
            << "block " << block << " isa " << int(isa) << " at " << b;
    }
  }
}

// What scan_entropy_bytes answered before the fast sums: each block's
// byte_entropy, runs of blocks at or above the threshold.
std::vector<EntropyRun> naive_runs(const std::vector<std::uint8_t>& d, const EntropyQuery& q) {
  std::vector<EntropyRun> runs;
  for (std::size_t at = 0; at + q.block <= d.size(); at += q.block) {
    const double h = byte_entropy(d.data() + at, q.block);
    if (h + 1e-12 < q.bits) continue;
    if (!runs.empty() && runs.back().offset + runs.back().bytes == at) {
      runs.back().bytes += q.block;
      runs.back().min_bits = std::min(runs.back().min_bits, h);
      runs.back().max_bits = std::max(runs.back().max_bits, h);
    } else {
      runs.push_back({at, q.block, h, h});
    }
  }
  return runs;
}

TEST(EntropyScan, RunsAndTheirBitsAreExactlyThoseOfTheExactEntropy) {
  std::vector<std::uint8_t> d = noise(3 << 20, 8);
  // A 32-byte block of 8 pairs and 16 single bytes has exactly 4.5 bits per
  // byte: on the threshold, where only the exact value may decide.
  for (std::size_t at : {std::size_t{4096 + 64}, std::size_t{(2 << 20) - 32}}) {
    for (int i = 0; i < 32; ++i) d[at + i] = static_cast<std::uint8_t>(i < 16 ? 0x40 + i / 2 : 0x50 + i);
  }
  for (double bits : {4.5, 4.4, 4.6, 1.0, 0.5}) {
    for (std::size_t block : {32u, 64u, 4096u}) {
      const EntropyQuery q{bits, block};
      std::vector<EntropyRun> got;
      detail::scan_entropy_bytes(d.data(), d.size(), q, [&](const EntropyRun& r) {
        got.push_back(r);
        return true;
      });
      const std::vector<EntropyRun> want = naive_runs(d, q);
      ASSERT_EQ(got.size(), want.size()) << bits << "/" << block;
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].offset, want[i].offset);
        EXPECT_EQ(got[i].bytes, want[i].bytes);
        // Bit for bit: the JSON output prints them whole.
        EXPECT_EQ(std::memcmp(&got[i].min_bits, &want[i].min_bits, sizeof(double)), 0) << got[i].min_bits << " " << want[i].min_bits;
        EXPECT_EQ(std::memcmp(&got[i].max_bits, &want[i].max_bits, sizeof(double)), 0) << got[i].max_bits << " " << want[i].max_bits;
      }
    }
  }
}

class ScanFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/extmem-filters-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::vector<std::uint8_t>& d) {
    const fs::path p = dir_ / "img";
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
    return p;
  }
  fs::path dir_;
};

// Hits and their fields from the read search (scan_read: pieces, reads of
// 256 KiB with margins, threads) equal those of one scan_buffer over all of
// it, also for hits that straddle a read or piece border or sit at the
// file's first and last bytes.
TEST_F(ScanFile, ReadSearchFindsWhatOneBufferSearchFinds) {
  constexpr std::size_t kSize = (1 << 20) + 4096 + 13;
  std::vector<std::uint8_t> d = noise(kSize, 2);
  const std::uint8_t pat[] = {0xb1, 0x7e, 0x55, 0xed, 0xc0, 0xde};
  const std::uint64_t marker = 0x7461696c;
  for (std::size_t at : {std::size_t{0}, std::size_t{(256 << 10) - 3}, std::size_t{(256 << 10) - 6},
                         std::size_t{(512 << 10) - 8}, std::size_t{65536 - 2}, kSize - 6, kSize - 8, kSize - 12}) {
    std::memcpy(&d[at], pat, 6);
  }
  for (std::size_t at : {std::size_t{0}, std::size_t{24}, std::size_t{(256 << 10) + 8}, std::size_t{(256 << 10) - 8},
                         std::size_t{(768 << 10)}, kSize - 13 - 4}) {
    std::memcpy(&d[at], &marker, 4);
  }
  const fs::path path = write(d);
  std::vector<ScanQuery> queries(6);
  queries[0].pattern.assign(pat, pat + 6);
  queries[1].pattern = {0xc0, 0xde, 0xb1};  // straddles the planted pattern ends too
  queries[2].kind = ScanQuery::Kind::value, queries[2].width = 4, queries[2].value = marker, queries[2].context = 2;
  queries[3].kind = ScanQuery::Kind::value, queries[3].width = 2, queries[3].value = 0x3f3f;  // frequent in the noise
  queries[4].kind = ScanQuery::Kind::value, queries[4].width = 8, queries[4].value = 0x7e55edc0de000000;
  auto t = RecordTemplate::parse("before@-0x18:u64 marker@0:u32=0x7461696c after@0x100:u16");
  ASSERT_TRUE(t.ok());
  queries[5].kind = ScanQuery::Kind::record, queries[5].record = std::move(*t);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (const ScanQuery& q : queries) {
    std::vector<ScanHit> want;
    std::uint64_t n = 0;
    scan_buffer(d.data(), d.size(), 0, 0, d.size(), q, [&](const ScanHit& h) {
      want.push_back(h);
      return true;
    }, n);
    for (unsigned workers : {0u, 3u}) {
      for (std::size_t chunk : {std::size_t{4096}, std::size_t{300000}}) {
        for (std::size_t cap : {std::size_t{3}, std::size_t{100000}}) {
          std::vector<ScanHit> got;
          std::uint64_t hits = 0, bytes = 0;
          auto r = detail::scan_read(fd, path.string(), d.size(), q, [&](const ScanHit& h) {
            got.push_back(h);
            return true;
          }, workers, chunk, cap, hits, bytes);
          ASSERT_TRUE(r.ok()) << r.error().message();
          EXPECT_TRUE(*r);
          ASSERT_EQ(got.size(), want.size()) << int(q.kind) << " workers " << workers << " chunk " << chunk;
          for (std::size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].address, want[i].address);
            EXPECT_EQ(got[i].fields, want[i].fields);
            EXPECT_EQ(got[i].before, want[i].before);
            EXPECT_EQ(got[i].after, want[i].after);
          }
          EXPECT_EQ(hits, want.size());
          EXPECT_EQ(bytes, d.size());
        }
      }
    }
  }
  ::close(fd);
}

TEST_F(ScanFile, TwinsAndEntropyOfAFileEqualThoseOfItsBytes) {
  std::vector<std::uint8_t> d = noise(6 << 20, 12);
  // Copies of pages and of 64-byte pieces, at the start, the end and across pieces of work.
  std::memcpy(&d[(6 << 20) - 4096], &d[4096], 4096);
  std::memcpy(&d[(3 << 20)], &d[4096], 4096);
  std::memcpy(&d[0], &d[8192], 4096);
  for (std::size_t block : {64u, 4096u, 1u << 20}) {
    const fs::path path = write(d);
    const TwinQuery q{block, 0};
    const TwinResult want = detail::find_twins_bytes(d.data(), d.size(), q);
    auto got = find_twins(path.string(), q);
    ASSERT_TRUE(got.ok()) << got.error().message();
    EXPECT_EQ(got->blocks, want.blocks);
    EXPECT_EQ(got->constant_blocks, want.constant_blocks);
    EXPECT_EQ(got->distinct, want.distinct);
    ASSERT_EQ(got->groups.size(), want.groups.size()) << block;
    for (std::size_t i = 0; i < got->groups.size(); ++i) {
      EXPECT_EQ(got->groups[i].hash, want.groups[i].hash);
      EXPECT_EQ(got->groups[i].offsets, want.groups[i].offsets);
    }
    if (block == 4096) ASSERT_FALSE(want.groups.empty());
  }
  const fs::path path = write(d);
  const EntropyQuery eq{4.5, 32};
  std::vector<EntropyRun> got;
  auto st = scan_entropy(path.string(), eq, [&](const EntropyRun& r) {
    got.push_back(r);
    return true;
  });
  ASSERT_TRUE(st.ok());
  const std::vector<EntropyRun> want = naive_runs(d, eq);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].offset, want[i].offset);
    EXPECT_EQ(got[i].bytes, want[i].bytes);
    EXPECT_EQ(got[i].min_bits, want[i].min_bits);
    EXPECT_EQ(got[i].max_bits, want[i].max_bits);
  }
}

}  // namespace
