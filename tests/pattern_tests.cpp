// Tests of the seeded byte patterns (extmem/core/pattern.h).
#include "extmem/core/pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace {

namespace pattern = extmem::pattern;

std::vector<std::byte> filled(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> v(n);
  pattern::fill(v, seed);
  return v;
}

constexpr std::uint64_t kSeed = 0x65786d656d000000ull;

// Filling twice with the same seed gives the same bytes.
TEST(Pattern, FillIsDeterministic) { EXPECT_EQ(filled(10000, kSeed), filled(10000, kSeed)); }

// A short fill equals the prefix of a long fill, for lengths that cut a word anywhere.
TEST(Pattern, ShortFillIsPrefixOfLongFill) {
  const auto long_fill = filled(4096, kSeed);
  for (std::size_t n : {1u, 7u, 8u, 9u, 13u, 100u, 4095u}) {
    SCOPED_TRACE(n);
    const auto short_fill = filled(n, kSeed);
    EXPECT_TRUE(std::equal(short_fill.begin(), short_fill.end(), long_fill.begin()));
  }
}

// Filling a slice leaves the bytes around it untouched, and the slice verifies on its own.
TEST(Pattern, SliceFillIsIndependent) {
  std::vector<std::byte> buf(3 * 4096, std::byte{0xcc});
  std::span<std::byte> mid(buf.data() + 4096, 4096);
  pattern::fill(mid, kSeed);
  EXPECT_EQ(pattern::first_mismatch(mid, kSeed), std::nullopt);
  for (std::size_t i = 0; i < 4096; ++i) ASSERT_EQ(buf[i], std::byte{0xcc}) << i;
  for (std::size_t i = 2 * 4096; i < buf.size(); ++i) ASSERT_EQ(buf[i], std::byte{0xcc}) << i;
}

// Two regions filled with their own seeds side by side each verify, and neither verifies under the other's seed.
TEST(Pattern, AdjacentRegionsDoNotMaskEachOther) {
  std::vector<std::byte> buf(2 * 4096);
  std::span<std::byte> a(buf.data(), 4096), b(buf.data() + 4096, 4096);
  pattern::fill(a, kSeed);
  pattern::fill(b, kSeed + 0x1001);
  EXPECT_EQ(pattern::first_mismatch(a, kSeed), std::nullopt);
  EXPECT_EQ(pattern::first_mismatch(b, kSeed + 0x1001), std::nullopt);
  EXPECT_NE(pattern::first_mismatch(a, kSeed + 0x1001), std::nullopt);
  EXPECT_NE(pattern::first_mismatch(b, kSeed), std::nullopt);
}

// The pattern is not a constant: a 4 KiB fill has many distinct byte values.
TEST(Pattern, FillIsNotConstant) {
  const auto v = filled(4096, kSeed);
  std::vector<bool> seen(256);
  for (std::byte b : v) seen[static_cast<unsigned>(b)] = true;
  EXPECT_GT(std::count(seen.begin(), seen.end(), true), 200);
}

// Seed 0 is a usable pattern too, not all zeros.
TEST(Pattern, SeedZeroIsNotZeros) {
  const auto v = filled(64, 0);
  EXPECT_NE(std::count(v.begin(), v.end(), std::byte{0}), 64);
}

// first_mismatch of a correct fill is nullopt.
TEST(Pattern, FirstMismatchNoneWhenEqual) {
  EXPECT_EQ(pattern::first_mismatch(filled(5000, kSeed), kSeed), std::nullopt);
}

// first_mismatch finds a single flipped byte at its exact offset, wherever it is.
TEST(Pattern, FirstMismatchFindsFlippedByte) {
  for (std::size_t at : {0u, 1u, 7u, 8u, 4095u, 4999u}) {
    SCOPED_TRACE(at);
    auto v = filled(5000, kSeed);
    v[at] ^= std::byte{0x01};
    EXPECT_EQ(pattern::first_mismatch(v, kSeed), at);
  }
}

// first_mismatch reports the earliest of two differing bytes.
TEST(Pattern, FirstMismatchReportsEarliest) {
  auto v = filled(5000, kSeed);
  v[3000] ^= std::byte{0xff};
  v[1234] ^= std::byte{0x80};
  EXPECT_EQ(pattern::first_mismatch(v, kSeed), 1234u);
}

// first_mismatch of an all-zero buffer is 0 (a zeroed mapping never passes).
TEST(Pattern, FirstMismatchOfZerosIsEarly) {
  std::vector<std::byte> zeros(4096);
  auto at = pattern::first_mismatch(zeros, kSeed);
  ASSERT_TRUE(at.has_value());
  EXPECT_LT(*at, 8u);
}

// first_mismatch of an empty span is nullopt.
TEST(Pattern, FirstMismatchOfEmptyIsNone) {
  EXPECT_EQ(pattern::first_mismatch(std::span<const std::byte>(), kSeed), std::nullopt);
}

// Different seeds give different bytes in almost every position.
TEST(Pattern, DifferentSeedsDiffer) {
  const auto a = filled(4096, kSeed), b = filled(4096, kSeed + 1);
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 64u);  // ~16 expected by chance
}

// The seeds the probe uses for its regions (0x1001 apart) each give a distinct pattern.
TEST(Pattern, RegionSeedsDiffer) {
  std::vector<std::vector<std::byte>> fills;
  for (std::uint64_t r = 0; r < 8; ++r) fills.push_back(filled(256, kSeed + r * 0x1001));
  for (std::size_t i = 0; i < fills.size(); ++i)
    for (std::size_t j = i + 1; j < fills.size(); ++j) EXPECT_NE(fills[i], fills[j]) << i << " vs " << j;
}

// find() locates a pattern placed 4096 bytes into a buffer.
TEST(Pattern, FindLocatesPatternAtOffset4096) {
  std::vector<std::byte> buf(4 * 4096, std::byte{0});
  pattern::fill(std::span<std::byte>(buf.data() + 4096, 4096), kSeed);
  EXPECT_EQ(pattern::find(buf, kSeed, 4096), 4096u);
}

// find() locates a pattern at an unaligned offset.
TEST(Pattern, FindLocatesPatternAtUnalignedOffset) {
  std::vector<std::byte> buf(10000, std::byte{0x11});
  pattern::fill(std::span<std::byte>(buf.data() + 777, 512), kSeed);
  EXPECT_EQ(pattern::find(buf, kSeed, 512), 777u);
}

// find() at offset 0 returns 0.
TEST(Pattern, FindAtStart) { EXPECT_EQ(pattern::find(filled(4096, kSeed), kSeed, 4096), 0u); }

// find() does not find a different seed's pattern.
TEST(Pattern, FindIgnoresOtherSeed) {
  std::vector<std::byte> buf(3 * 4096, std::byte{0});
  pattern::fill(std::span<std::byte>(buf.data() + 4096, 4096), kSeed + 0x1001);
  EXPECT_EQ(pattern::find(buf, kSeed, 4096), std::nullopt);
}

// find() returns nullopt when the haystack is shorter than the length sought.
TEST(Pattern, FindInShortHaystackIsNone) {
  EXPECT_EQ(pattern::find(filled(100, kSeed), kSeed, 200), std::nullopt);
}

// find() with length 0 returns nullopt rather than a meaningless 0.
TEST(Pattern, FindZeroLengthIsNone) { EXPECT_EQ(pattern::find(filled(100, kSeed), kSeed, 0), std::nullopt); }

// find() caps length at 4096: a request for 64 KiB matches a payload of which only the first 4096 bytes are intact.
TEST(Pattern, FindCapsLengthAt4096) {
  std::vector<std::byte> buf(3 * 65536, std::byte{0});
  std::span<std::byte> payload(buf.data() + 8192, 65536);
  pattern::fill(payload, kSeed);
  payload[5000] ^= std::byte{0xff};  // beyond the cap
  EXPECT_EQ(pattern::find(buf, kSeed, 65536), 8192u);
}

// find() requires the whole sought length: a payload cut short before `length` bytes is not found.
TEST(Pattern, FindRequiresWholeLength) {
  std::vector<std::byte> buf(3 * 4096, std::byte{0});
  pattern::fill(std::span<std::byte>(buf.data() + 4096, 1000), kSeed);
  EXPECT_EQ(pattern::find(buf, kSeed, 2000), std::nullopt);
  EXPECT_EQ(pattern::find(buf, kSeed, 1000), 4096u);
}

}  // namespace
