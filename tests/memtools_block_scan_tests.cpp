// `extmem scan --entropy` and `--twins` on real files written here, with
// every planted block's offset known, near-misses beside them; through the
// real binary for the output forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/memtools/block_scan.h"
#include "support/run_shell.h"
#include "support/temp_files.h"

namespace {

using namespace extmem::memtools;
using nlohmann::json;

constexpr std::size_t kPage = 4096;

std::uint64_t num(const json& j) { return std::stoull(j.get<std::string>(), nullptr, 16); }

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    if (!line.empty() && line[0] == '{') out.push_back(json::parse(line));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return out;
}

// 32 pages: page i holds low-entropy bytes unique to it (values below 16, i
// in the first byte), except: pages 1, 5, 9 copies of page 20 (content A); pages 3 and 7 a
// content B that differs from A in its last byte only; pages 11 and 12 zero;
// page 13 all 0xff; and 96 bytes at 0x6020 (page 6) whose every 32-byte block
// holds 32 distinct bytes (5 bits per byte, the most a 32-byte block has).
class BlockScan : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::uint8_t> img(32 * kPage);
    std::uint32_t state = 12345;
    for (std::size_t p = 0; p < 32; ++p) {
      for (std::size_t i = 0; i < kPage; ++i) {
        state = state * 1103515245 + 12345;
        img[p * kPage + i] = static_cast<std::uint8_t>((state >> 16) & 0x0f);
      }
      img[p * kPage] = static_cast<std::uint8_t>(p);
    }
    std::vector<std::uint8_t> a(img.begin() + 20 * kPage, img.begin() + 21 * kPage);
    std::vector<std::uint8_t> b = a;
    b.back() ^= 1;
    for (std::size_t p : {1, 5, 9}) std::copy(a.begin(), a.end(), img.begin() + p * kPage);
    for (std::size_t p : {3, 7}) std::copy(b.begin(), b.end(), img.begin() + p * kPage);
    std::fill(img.begin() + 11 * kPage, img.begin() + 13 * kPage, 0);
    std::fill(img.begin() + 13 * kPage, img.begin() + 14 * kPage, 0xff);
    for (std::size_t i = 0; i < 96; ++i) img[0x6020 + i] = static_cast<std::uint8_t>(0x40 + (i * 37) % 96 + (i / 32));
    std::ofstream(image_, std::ios::binary).write(reinterpret_cast<const char*>(img.data()), static_cast<std::streamsize>(img.size()));
  }
  extmem::test::TempDir dir_;
  std::string image_ = dir_.file("ram.img");
};

TEST(ByteEntropy, ConstantIsZeroAndDistinctBytesAreLog2OfTheCount) {
  std::vector<std::uint8_t> c(32, 7), d(32);
  for (std::size_t i = 0; i < 32; ++i) d[i] = static_cast<std::uint8_t>(i);
  EXPECT_DOUBLE_EQ(byte_entropy(c.data(), c.size()), 0.0);
  EXPECT_NEAR(byte_entropy(d.data(), d.size()), 5.0, 1e-9);
  std::vector<std::uint8_t> half(32);
  for (std::size_t i = 0; i < 32; ++i) half[i] = static_cast<std::uint8_t>(i % 2);
  EXPECT_NEAR(byte_entropy(half.data(), half.size()), 1.0, 1e-9);
}

TEST(ParseEntropy, AcceptsBitsAndBlockAndRefusesTheUnreachable) {
  auto q = parse_entropy("4.5");
  ASSERT_TRUE(q);
  EXPECT_DOUBLE_EQ(q->bits, 4.5);
  EXPECT_EQ(q->block, 32u);
  q = parse_entropy("7.5/4K");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->block, 4096u);
  SyntaxError bad;
  EXPECT_FALSE(parse_entropy("5.5", &bad));  // a 32-byte block holds at most 5 bits per byte
  EXPECT_NE(bad.problem.find("at most 5"), std::string::npos);
  EXPECT_FALSE(parse_entropy("0", &bad));
  EXPECT_FALSE(parse_entropy("4.5/3", &bad));
  EXPECT_FALSE(parse_entropy("4x", &bad));
  EXPECT_EQ(bad.column, 1u);
  EXPECT_FALSE(parse_entropy("", &bad));
}

TEST_F(BlockScan, EntropyFindsTheDistinctByteRunAndNotTheNoise) {
  std::vector<EntropyRun> runs;
  auto st = scan_entropy(image_, EntropyQuery{4.9, 32}, [&](const EntropyRun& r) {
    runs.push_back(r);
    return true;
  });
  ASSERT_TRUE(st) << st.error().message();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].offset, 0x6020u);
  EXPECT_EQ(runs[0].bytes, 96u);
  EXPECT_NEAR(runs[0].min_bits, 5.0, 1e-9);
}

TEST_F(BlockScan, EntropyThresholdBelowTheNoiseFindsTheNoiseToo) {
  // Negative control: 16 byte values hold at most 4 bits per byte; at 3 bits the noise pages pass.
  std::uint64_t bytes = 0;
  auto st = scan_entropy(image_, EntropyQuery{3.0, 32}, [&](const EntropyRun& r) {
    bytes += r.bytes;
    return true;
  });
  ASSERT_TRUE(st);
  EXPECT_GT(bytes, 20 * kPage);
}

TEST_F(BlockScan, TwinsGroupIdenticalPagesOnlyAndLeaveOutConstantOnes) {
  auto r = find_twins(image_, TwinQuery{});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->groups.size(), 2u);
  EXPECT_EQ(r->groups[0].offsets, (std::vector<std::uint64_t>{1 * kPage, 5 * kPage, 9 * kPage, 20 * kPage}));
  EXPECT_EQ(r->groups[1].offsets, (std::vector<std::uint64_t>{3 * kPage, 7 * kPage}));  // B, not merged with A
  EXPECT_EQ(r->blocks, 32u);
  EXPECT_EQ(r->constant_blocks, 3u);  // two zero pages and the 0xff page, though the zero pages are alike
  EXPECT_EQ(r->distinct, 25u);  // 29 non-constant pages, A four times, B twice
  EXPECT_FALSE(r->stopped);
}

TEST_F(BlockScan, TwinsMaxBoundsTheDistinctContentsHeld) {
  auto r = find_twins(image_, TwinQuery{4096, 3});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->stopped);
  EXPECT_EQ(r->distinct, 3u);  // pages 0, 1 (A), 2; page 3 (B) would be the fourth
  EXPECT_EQ(r->bytes, 3 * kPage);  // searched up to page 3
}

TEST_F(BlockScan, TwinsOfSmallerBlocksFindCopiesInsidePages) {
  auto r = find_twins(image_, TwinQuery{1024, 0});
  ASSERT_TRUE(r);
  // A's first three quarters are in A's four pages and B's two (B differs in its last quarter only).
  ASSERT_GE(r->groups.size(), 5u);
  EXPECT_EQ(r->groups[0].offsets.size(), 6u);
  EXPECT_EQ(r->groups[0].offsets.front(), 1 * kPage);
}

TEST_F(BlockScan, CommandPrintsGroupsWithGuestPhysicalAddresses) {
  auto r = extmem::test::run_extmem("scan " + image_ + " --twins --ram-map=0x80000000:0:128K --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<json> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0]["match"], "twins");
  EXPECT_EQ(lines[0]["count"], 4);
  EXPECT_EQ(num(lines[0]["gpas"][1]), 0x80005000u);
  EXPECT_EQ(num(lines[0]["offsets"][1]), 0x5000u);
  EXPECT_NE(r.out.find("2 twin groups among 32 blocks of 4K (3 constant, left out; 25 distinct)"), std::string::npos)
      << r.out;
  auto e = extmem::test::run_extmem("scan " + image_ + " --entropy=4.9 --ram-map=0x80000000:0:128K");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("offset=0x6020 gpa=0x80006020 bytes=0x60 blocks=3 entropy=5.00..5.00 bits/byte"),
            std::string::npos)
      << e.out;
}

}  // namespace
