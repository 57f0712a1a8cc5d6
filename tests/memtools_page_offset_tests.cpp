// The page-offset form of `scan FILE` in each of its forms (preadv of whole
// pages, pread of each page's needle, the mapping; chosen through
// EXTMEM_PAGE_OFFSET_READ): on real files it finds exactly what a
// byte-by-byte check of every page finds, at the end of the file, at the end
// of a page, with several page sizes, and stops at --max.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <string>
#include <vector>

#include "extmem/memtools/scanner.h"
#include "support/temp_files.h"

namespace {

using namespace extmem::memtools;

// File offsets where `needle` sits at `off` within a `page`-byte page: the reference answer.
std::vector<std::uint64_t> expected(const std::vector<std::uint8_t>& data, const std::vector<std::uint8_t>& needle,
                                    std::uint64_t page, std::uint64_t off) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t at = off; at + needle.size() <= data.size(); at += page)
    if (std::memcmp(data.data() + at, needle.data(), needle.size()) == 0) out.push_back(at);
  return out;
}

std::vector<std::uint64_t> found(const std::string& path, const ScanQuery& q) {
  std::vector<std::uint64_t> out;
  auto st = scan_file(path, q, [&](const ScanHit& h) {
    out.push_back(h.address);
    return true;
  });
  EXPECT_TRUE(st) << st.error().message();
  return out;
}

class PageOffsetScan : public ::testing::TestWithParam<const char*> {
 protected:
  // Single-threaded here (the scan's threads start inside scan_file), so setenv is safe.
  void SetUp() override { ::setenv("EXTMEM_PAGE_OFFSET_READ", GetParam(), 1); }
  void TearDown() override { ::unsetenv("EXTMEM_PAGE_OFFSET_READ"); }
  // 40 MiB + 1000 bytes (three 16 MiB pieces, the last one partial, not a
  // whole number of pages) of random bytes, the needle planted in `every`-th page at each offset asked.
  void write(std::uint64_t page, std::uint64_t off, std::uint64_t every) {
    data_.resize((40u << 20) + 1000);
    // splitmix64, eight bytes a step: a byte per mt19937_64 call cost seconds per file in
    // the sanitized -O0 test build, and the content only has to be the same on every run.
    std::uint64_t state = 7;
    for (std::size_t at = 0; at < data_.size(); at += 8) {
      std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      std::memcpy(data_.data() + at, &z, std::min<std::size_t>(8, data_.size() - at));
    }
    for (std::uint64_t at = off; at + needle_.size() <= data_.size(); at += page * every)
      std::memcpy(data_.data() + at, needle_.data(), needle_.size());
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(data_.data()),
                                                 static_cast<std::streamsize>(data_.size()));
  }
  ScanQuery query(std::uint64_t page, std::uint64_t off) const {
    ScanQuery q;
    q.pattern = needle_;
    q.page_size = page;
    q.page_offset = off;
    return q;
  }
  extmem::test::TempDir dir_;
  std::string path_ = dir_.file("img");
  std::vector<std::uint8_t> data_;
  std::vector<std::uint8_t> needle_ = {0xb1, 0x7e, 0x55, 0xed, 0xc0, 0xde};
};

TEST_P(PageOffsetScan, FindsWhatEveryPageHoldsAtThatOffset) {
  write(4096, 0x59c, 3);
  const auto want = expected(data_, needle_, 4096, 0x59c);
  ASSERT_GT(want.size(), 3000u);
  EXPECT_EQ(found(path_, query(4096, 0x59c)), want);
}

TEST_P(PageOffsetScan, NeedleEndingAtThePageEndAndOffsetZero) {
  write(4096, 4096 - 6, 2);
  EXPECT_EQ(found(path_, query(4096, 4096 - 6)), expected(data_, needle_, 4096, 4096 - 6));
  write(4096, 0, 5);
  EXPECT_EQ(found(path_, query(4096, 0)), expected(data_, needle_, 4096, 0));
}

TEST_P(PageOffsetScan, OtherPageSizes) {
  write(65536, 0x1234, 1);
  EXPECT_EQ(found(path_, query(65536, 0x1234)), expected(data_, needle_, 65536, 0x1234));
  write(16, 3, 7);
  EXPECT_EQ(found(path_, query(16, 3)), expected(data_, needle_, 16, 3));
}

TEST_P(PageOffsetScan, ANeedleCutByTheEndOfTheFileIsNoHit) {
  write(4096, 0x59c, 1);
  // The file's last page: 1000 bytes, so a needle at 0x59c (1436) would run past the end.
  const auto got = found(path_, query(4096, 0x59c));
  ASSERT_FALSE(got.empty());
  EXPECT_LE(got.back() + needle_.size(), data_.size());
  EXPECT_EQ(got, expected(data_, needle_, 4096, 0x59c));
}

TEST_P(PageOffsetScan, MaxStopsInOrder) {
  write(4096, 0x59c, 1);
  ScanQuery q = query(4096, 0x59c);
  q.max_hits = 5000;  // past the first 16 MiB piece (4096 pages)
  const auto got = found(path_, q);
  const auto want = expected(data_, needle_, 4096, 0x59c);
  ASSERT_EQ(got.size(), 5000u);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
}

INSTANTIATE_TEST_SUITE_P(Reads, PageOffsetScan, ::testing::Values("copy", "each", "map"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
