// T1-cuda-vmm-multichunk's chunk plan (src/probe/routes/cuda/chunks.h): sizes, offsets, windows.
#include "probe/routes/cuda/chunks.h"

#include <gtest/gtest.h>

namespace chunks = extmem::probe::chunks;

namespace {
constexpr std::size_t kMiB = 1 << 20;
}  // namespace

// The default size on the H200's 2 MiB granularity: chunks of 2, 4 and 6 MiB at 0, 2 and 6 MiB.
TEST(CudaChunks, SmallSizeGetsOneGranulePerUnit) {
  auto p = chunks::plan(65536, 2 * kMiB);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->sizes, (std::vector<std::size_t>{2 * kMiB, 4 * kMiB, 6 * kMiB}));
  EXPECT_EQ(p->offsets, (std::vector<std::size_t>{0, 2 * kMiB, 6 * kMiB}));
  EXPECT_EQ(p->total, 12 * kMiB);
}

// A size larger than one unit's worth grows the unit by whole granules, never below the size.
TEST(CudaChunks, LargeSizeGrowsTheUnit) {
  auto p = chunks::plan(13 * kMiB, 2 * kMiB);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->sizes, (std::vector<std::size_t>{4 * kMiB, 8 * kMiB, 12 * kMiB}));
  EXPECT_GE(p->total, 13 * kMiB);
  auto exact = chunks::plan(12 * kMiB, 2 * kMiB);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->total, 12 * kMiB);  // exactly one unit's worth: no extra granule
}

// Every chunk is a distinct multiple of the granularity.
TEST(CudaChunks, SizesDifferAndAreGranularityMultiples) {
  auto p = chunks::plan(1, 65536, 5);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->sizes.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(p->sizes[i] % 65536, 0u);
    if (i > 0) EXPECT_GT(p->sizes[i], p->sizes[i - 1]);
  }
}

// Zero granularity or zero chunks are refused, not divided by.
TEST(CudaChunks, BadInputIsInvalidArgument) {
  auto g = chunks::plan(65536, 0);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().kind, extmem::ErrorKind::invalid_argument);
  EXPECT_FALSE(chunks::plan(65536, 4096, 0));
  EXPECT_FALSE(chunks::plan(static_cast<std::size_t>(-1), 2 * kMiB));  // cannot hold that many bytes
}

// The windows straddle each boundary: kBoundaryHalf bytes either side.
TEST(CudaChunks, WindowsStraddleEveryBoundary) {
  auto p = chunks::plan(65536, 2 * kMiB);
  ASSERT_TRUE(p);
  auto w = chunks::windows(*p);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].boundary, 1u);
  EXPECT_EQ(w[0].start, 2 * kMiB - chunks::kBoundaryHalf);
  EXPECT_EQ(w[0].length, 2 * chunks::kBoundaryHalf);
  EXPECT_EQ(chunks::chunk_of(*p, w[0].start), 0u);
  EXPECT_EQ(chunks::chunk_of(*p, w[0].start + chunks::kBoundaryHalf), 1u);
  EXPECT_EQ(w[1].start + chunks::kBoundaryHalf, 6 * kMiB);
  EXPECT_EQ(chunks::chunk_of(*p, 12 * kMiB), 3u);  // past the end
}

// A peer's announcement is checked: a size off the granularity or a short total is refused with the rule.
TEST(CudaChunks, AnnouncedSizesAreChecked) {
  auto ok = chunks::from_sizes({2 * kMiB, 4 * kMiB}, 2 * kMiB, 65536);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->offsets, (std::vector<std::size_t>{0, 2 * kMiB}));
  auto odd = chunks::from_sizes({2 * kMiB, kMiB}, 2 * kMiB, 65536);
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().detail.find("chunk 1"), std::string::npos) << odd.error().detail;
  EXPECT_FALSE(chunks::from_sizes({2 * kMiB}, 2 * kMiB, 4 * kMiB));
  EXPECT_FALSE(chunks::from_sizes({}, 2 * kMiB, 1));
}
