// The T4 image family's two rounds (routes/t4_image/round.h), driven by an
// importer and an owner that share one image in memory: what the family
// decides from the compares, and that a failing step stops it, whichever
// importer runs. The rows themselves run on lavapipe in probe_integration_tests.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "probe/routes/t4_image/round.h"

namespace {

using namespace extmem;
using namespace extmem::probe;
using image::Compare;
using image::Expected;
using image::Rect;

constexpr std::uint32_t kW = 16, kH = 8;

// One image both sides see; the owner fills and checks it, the importer reads and writes it.
struct SharedImage {
  std::vector<std::byte> texels = std::vector<std::byte>(std::size_t{kW} * kH * 4);
  int fills = 0;

  void fill_all(const Expected& e) { image::fill(texels, Rect{0, 0, kW, kH}, e); }
  image::Owner owner() {
    return {[this](const Expected& e) -> Result<Compare> { return image::compare(texels, kW * 4, kW, kH, e); },
            [this](std::uint64_t seed) -> Status {
              ++fills;
              fill_all(Expected{seed});
              return {};
            }};
  }
};

// An importer that reads the shared texels and writes its rectangle into them;
// `drop_writes` forgets the writes, `stale` keeps reading its first copy, and
// `fail_read_in` makes that round's read fail.
struct MemoryImporter {
  SharedImage& shared;
  bool drop_writes = false;
  bool stale = false;
  int fail_read_in = 0;
  std::vector<std::byte> copy;

  image::Importer importer() {
    image::Importer imp;
    imp.who = "test";
    imp.read = [this](int round) -> Result<std::span<const std::byte>> {
      if (round == fail_read_in) return Error{"round 2: read the image", ErrorKind::driver, "VK_ERROR_DEVICE_LOST"};
      if (!stale || copy.empty()) copy = shared.texels;
      return std::span<const std::byte>(copy);
    };
    imp.write = [this](int round, const Rect& rect) -> Result<Expected> {
      const Expected after{image::owner_seed(round), rect, image::importer_seed(round)};
      if (drop_writes) return after;
      std::vector<std::byte> part(std::size_t{rect.w} * rect.h * 4);
      image::fill(part, rect, after);
      for (std::uint32_t y = 0; y < rect.h; ++y)
        std::memcpy(shared.texels.data() + ((std::size_t{rect.y} + y) * kW + rect.x) * 4,
                    part.data() + std::size_t{y} * rect.w * 4, std::size_t{rect.w} * 4);
      return after;
    };
    return imp;
  }
};

struct Channels {
  std::pair<os::Channel, os::Channel> peer = *os::Channel::pair();
  std::pair<os::Channel, os::Channel> parent = *os::Channel::pair();
  ChildContext ctx{HalfParams{"T4-image-opaque-fd", Role::client}, std::move(peer.first), std::move(parent.first)};
};

// Negative control: an importer that sees and writes the owner's image faithfully passes both ways.
TEST(ImageRound, FaithfulImporterRoundTrips) {
  Channels c;
  SharedImage shared;
  shared.fill_all(Expected{image::owner_seed(1)});
  MemoryImporter m{shared};
  Leg leg{"vkimage", true};
  ASSERT_TRUE(image::run_rounds(c.ctx, m.importer(), shared.owner(), kW, kH, leg));
  EXPECT_TRUE(leg.read_ok);
  EXPECT_TRUE(leg.write_ok);
  EXPECT_EQ(leg.note, "");
  EXPECT_EQ(shared.fills, 1) << "the owner refills once, between the rounds";
}

// Writes that never reach the owner: write-only fails, and each round's note says what the owner read.
TEST(ImageRound, LostWritesAreTheOwnersReadInEachRound) {
  Channels c;
  SharedImage shared;
  shared.fill_all(Expected{image::owner_seed(1)});
  MemoryImporter m{shared, true};
  Leg leg{"vkimage", true};
  ASSERT_TRUE(image::run_rounds(c.ctx, m.importer(), shared.owner(), kW, kH, leg));
  EXPECT_TRUE(leg.read_ok);
  EXPECT_FALSE(leg.write_ok);
  EXPECT_NE(leg.note.find("round 1 owner read: "), std::string::npos) << leg.note;
  EXPECT_NE(leg.note.find("round 2 owner read: "), std::string::npos) << leg.note;
}

// A copy that does not follow the owner's refill is caught in round 2, named after the importer.
TEST(ImageRound, StaleCopyFailsTheSecondRead) {
  Channels c;
  SharedImage shared;
  shared.fill_all(Expected{image::owner_seed(1)});
  MemoryImporter m{shared};
  m.stale = true;
  Leg leg{"vkimage", true};
  ASSERT_TRUE(image::run_rounds(c.ctx, m.importer(), shared.owner(), kW, kH, leg));
  EXPECT_FALSE(leg.read_ok);
  EXPECT_EQ(leg.note.find("round 1 test read"), std::string::npos) << leg.note;
  EXPECT_NE(leg.note.find("round 2 test read: "), std::string::npos) << leg.note;
}

// A failing step stops the rounds: the leg holds that step and code and decided nothing.
TEST(ImageRound, FailedStepStopsWithItsStepAndCode) {
  Channels c;
  SharedImage shared;
  shared.fill_all(Expected{image::owner_seed(1)});
  MemoryImporter m{shared};
  m.fail_read_in = 2;
  Leg leg{"vkimage", true};
  EXPECT_FALSE(image::run_rounds(c.ctx, m.importer(), shared.owner(), kW, kH, leg));
  EXPECT_EQ(leg.failed_step, "round 2: read the image");
  EXPECT_EQ(leg.code, "VK_ERROR_DEVICE_LOST");
  EXPECT_FALSE(leg.read_ok);
  EXPECT_FALSE(leg.write_ok);
}

TEST(ImageRound, DetailNamesBothRectangles) {
  EXPECT_EQ(image::rounds_detail(256, 256), "rounds=2 rect1=(32,32 64x64) rect2=(160,160 64x64)");
}

}  // namespace
