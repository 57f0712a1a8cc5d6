// The scenarios of docs/reclaim.md on a real Vulkan device (lavapipe in CI),
// each in one frame, reading back the GPU's output; and the two negative
// controls, which must show the failure the mechanism prevents.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "extmem/reclaim/vulkan.h"

namespace rc = extmem::reclaim;

namespace {

constexpr std::uint32_t kBand = 64;  // output words per band
constexpr std::uint64_t kMiB = 1ull << 20;

std::unique_ptr<rc::VulkanBuffers> open(rc::VulkanOptions options) {
  auto made = rc::VulkanBuffers::create(options);
  if (!made) {
    ADD_FAILURE() << "VulkanBuffers::create: " << made.error().message();
    return nullptr;
  }
  return std::move(*made);
}

std::uint32_t colour_of(std::uint32_t round) { return 0xff000000u | (round * 0x00051f3du & 0x00ffffffu) | 1u; }

// Output words [first, first + count) that are not `colour`.
int wrong_words(const std::vector<std::uint32_t>& out, std::uint32_t first, std::uint32_t count, std::uint32_t colour) {
  int wrong = 0;
  for (std::uint32_t i = first; i < first + count; ++i) wrong += out[i] != colour;
  return wrong;
}

TEST(ReclaimVulkan, Scenario1RespecifyWithoutUseDestroysAtOnce) {
  auto v = open({.output_words = kBand});
  ASSERT_TRUE(v);
  const rc::BufferId b = v->create_buffer();
  for (std::uint32_t i = 0; i < 1024; ++i) ASSERT_TRUE(v->respecify(b, 4096, colour_of(i)).ok());
  ASSERT_TRUE(v->paint(b, 0, kBand).ok());
  auto out = v->read_output();
  ASSERT_TRUE(out.ok()) << out.error().message();
  const rc::Gauges& g = v->gauges();
  RecordProperty("gauges", g.line());
  EXPECT_LE(g.live_stores_peak, 4u * 1) << g.line();
  EXPECT_EQ(g.parked_count_peak, 0u) << g.line();
  EXPECT_EQ(wrong_words(*out, 0, kBand, colour_of(1023)), 0) << "the final use did not land";
}

struct Scenario2 {
  rc::Gauges gauges;
  int wrong_bands = 0;
};

Scenario2 run_scenario2(std::uint64_t budget, rc::SubmitTracking tracking = rc::SubmitTracking::automatic) {
  Scenario2 s;
  constexpr std::uint32_t kRounds = 48;
  auto v = open({.budget_bytes = budget, .output_words = kRounds * kBand, .tracking = tracking});
  if (!v) return s;
  if (tracking != rc::SubmitTracking::automatic) EXPECT_EQ(v->tracking(), tracking);
  const rc::BufferId b = v->create_buffer();
  for (std::uint32_t r = 0; r < kRounds; ++r) {
    EXPECT_TRUE(v->respecify(b, kMiB, colour_of(r)).ok());
    EXPECT_TRUE(v->paint(b, r * kBand, kBand).ok());
  }
  auto out = v->read_output();
  EXPECT_TRUE(out.ok());
  if (!out) return s;
  for (std::uint32_t r = 0; r < kRounds; ++r) s.wrong_bands += wrong_words(*out, r * kBand, kBand, colour_of(r)) != 0;
  s.gauges = v->gauges();
  return s;
}

TEST(ReclaimVulkan, Scenario2ByteBudgetBoundsParkedBytesAndEveryBandKeepsItsColour) {
  Scenario2 s = run_scenario2(8 * kMiB);
  RecordProperty("gauges", s.gauges.line());
  EXPECT_LE(s.gauges.parked_bytes_peak, 8 * kMiB + kMiB) << s.gauges.line();
  EXPECT_LE(s.gauges.live_stores_peak, 1u + 8 + 2) << s.gauges.line();
  EXPECT_GE(s.gauges.forced_syncs, 1u) << s.gauges.line();
  EXPECT_EQ(s.wrong_bands, 0) << "a store was destroyed before its GPU use ran";
}

TEST(ReclaimVulkan, Scenario2WithFenceTracking) {
  Scenario2 s = run_scenario2(8 * kMiB, rc::SubmitTracking::fences);
  EXPECT_LE(s.gauges.parked_bytes_peak, 8 * kMiB + kMiB) << s.gauges.line();
  EXPECT_LE(s.gauges.live_stores_peak, 1u + 8 + 2) << s.gauges.line();
  EXPECT_EQ(s.wrong_bands, 0);
}

TEST(ReclaimVulkan, LavapipeTracksOnATimelineSemaphore) {
  // lavapipe exposes VK_KHR_timeline_semaphore (see the probe's phase A), so automatic picks it.
  auto v = open({.output_words = kBand});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->tracking(), rc::SubmitTracking::timeline) << v->device_name();
  EXPECT_STREQ(rc::to_string(v->tracking()), "timeline");
}

TEST(ReclaimVulkan, NegativeControlBudgetZeroBreaksScenario2Bounds) {
  Scenario2 s = run_scenario2(0);
  RecordProperty("gauges", s.gauges.line());
  EXPECT_GT(s.gauges.parked_bytes_peak, 8 * kMiB + kMiB) << s.gauges.line();
  EXPECT_GT(s.gauges.live_stores_peak, 1u + 8 + 2) << s.gauges.line();
  EXPECT_EQ(s.gauges.forced_syncs, 0u);
  EXPECT_EQ(s.wrong_bands, 0);  // correct, just unbounded
}

TEST(ReclaimVulkan, Scenario3SmallStoresAreBoundedByTheCountCeiling) {
  auto v = open({.output_words = kBand});
  ASSERT_TRUE(v);
  const rc::BufferId b = v->create_buffer();
  constexpr std::uint32_t kRounds = 3000;
  for (std::uint32_t r = 0; r < kRounds; ++r) {
    ASSERT_TRUE(v->respecify(b, 256, colour_of(r)).ok());
    ASSERT_TRUE(v->paint(b, 0, kBand).ok());
  }
  auto out = v->read_output();
  ASSERT_TRUE(out.ok()) << out.error().message();
  const rc::Gauges& g = v->gauges();
  RecordProperty("gauges", g.line());
  EXPECT_LE(g.live_stores_peak, 1u + rc::kParkedCountCeiling + 2) << g.line();
  EXPECT_LE(g.parked_count_peak, rc::kParkedCountCeiling + 1) << g.line();
  EXPECT_LT(g.parked_bytes_peak, 64 * kMiB) << "the count ceiling, not the bytes, must bound this";
  EXPECT_GE(g.forced_syncs, 2u) << g.line();
  EXPECT_EQ(wrong_words(*out, 0, kBand, colour_of(kRounds - 1)), 0) << "the final use did not land";
}

struct Scenario4 {
  bool handle_reused = false;
  int words_a = 0;
  int words_b = 0;
  std::uint64_t epoch_before = 0, epoch_after = 0;
};

constexpr std::uint32_t kColourA = 0xff0000ffu;
constexpr std::uint32_t kColourB = 0xffff0000u;

// Use S1 (A); orphan S1 and submit without waiting; retire that submission;
// park another store so the sweep destroys S1; make a store (colour B) that may
// get S1's handle value; use it with the same range.
Scenario4 run_scenario4(rc::VulkanOptions options) {
  Scenario4 s;
  options.output_words = 2 * kBand;
  auto v = open(options);
  if (!v) return s;
  const rc::BufferId a = v->create_buffer(), c = v->create_buffer();
  EXPECT_TRUE(v->respecify(a, 256, kColourA).ok());
  const std::uint64_t s1 = v->store_handle(a);
  EXPECT_TRUE(v->paint(a, 0, kBand).ok());
  EXPECT_TRUE(v->delete_store(a).ok());
  EXPECT_TRUE(v->flush().ok());
  EXPECT_TRUE(v->wait_submitted().ok());
  EXPECT_EQ(v->gauges().parked_count, 1u);
  s.epoch_before = v->gauges().destroy_epoch;
  EXPECT_TRUE(v->respecify(c, 256, 0xff00ff00u).ok());
  EXPECT_TRUE(v->paint(c, kBand, kBand).ok());
  EXPECT_TRUE(v->delete_store(c).ok());  // parks c's store; the sweep destroys S1
  s.epoch_after = v->gauges().destroy_epoch;
  EXPECT_EQ(v->gauges().parked_count, 1u) << "S1 should be gone, c's store parked";
  EXPECT_TRUE(v->respecify(a, 256, kColourB).ok());
  s.handle_reused = v->store_handle(a) == s1;
  EXPECT_TRUE(v->paint(a, 0, kBand).ok());
  auto out = v->read_output();
  EXPECT_TRUE(out.ok());
  if (!out) return s;
  for (std::uint32_t i = 0; i < kBand; ++i) {
    s.words_a += (*out)[i] == kColourA;
    s.words_b += (*out)[i] == kColourB;
  }
  return s;
}

TEST(ReclaimVulkan, Scenario4HandleReuseWithLifoDoubleReadsTheNewStore) {
  rc::LifoHandleSource lifo;
  Scenario4 s = run_scenario4({.handles = &lifo});
  EXPECT_TRUE(s.handle_reused) << "the LIFO double must hand S1's handle value to the new store";
  EXPECT_GT(s.epoch_after, s.epoch_before);
  EXPECT_EQ(s.words_b, static_cast<int>(kBand));
}

TEST(ReclaimVulkan, NegativeControlMemoWithoutEpochReadsColourA) {
  rc::LifoHandleSource lifo;
  // Quarantine keeps S1's memory alive, so the stale descriptor set reads A
  // instead of freed memory.
  Scenario4 s = run_scenario4(
      {.memo_keying = rc::MemoKeying::handle_range_only, .handles = &lifo, .quarantine_destroyed = true});
  EXPECT_TRUE(s.handle_reused);
  EXPECT_EQ(s.words_a, static_cast<int>(kBand)) << "the memo without the epoch must rebind S1's descriptor set";
  EXPECT_EQ(s.words_b, 0);
}

TEST(ReclaimVulkan, Scenario4WithTheDriversOwnHandles) {
  // Additional evidence: real VkBuffer handle values as memo keys; whether
  // the driver reuses S1's value is recorded, the output must be B either way.
  Scenario4 s = run_scenario4({});
  RecordProperty("driver_reused_handle", s.handle_reused ? "yes" : "no");
  EXPECT_EQ(s.words_b, static_cast<int>(kBand));
}

TEST(ReclaimVulkan, DiscardedRecordingsStoreIsFreedByTheIdleProof) {
  auto v = open({.output_words = kBand});
  ASSERT_TRUE(v);
  const rc::BufferId b = v->create_buffer();
  ASSERT_TRUE(v->respecify(b, 4096, 1).ok());
  ASSERT_TRUE(v->paint(b, 0, kBand).ok());     // recording for submit index 1 is open
  ASSERT_TRUE(v->respecify(b, 4096, 2).ok());  // parks the used store under index 1
  EXPECT_EQ(v->gauges().parked_count, 1u) << v->gauges().line();
  v->discard_recording();  // index 1 will never be submitted by that recording
  ASSERT_TRUE(v->end_frame().ok());  // the boundary's sweep: idle, so proof 3 frees it
  EXPECT_EQ(v->gauges().parked_count, 0u) << v->gauges().line();
  ASSERT_TRUE(v->paint(b, 0, kBand).ok());
  auto out = v->read_output();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(wrong_words(*out, 0, kBand, 2), 0);
}

class ReclaimVulkanTracking : public ::testing::TestWithParam<rc::SubmitTracking> {};

TEST_P(ReclaimVulkanTracking, ProofTwoFreesStoresOfRetiredSubmissionsWithoutForcedSyncs) {
  auto v = open({.submit_every_uses = 8, .output_words = kBand, .tracking = GetParam()});
  ASSERT_TRUE(v);
  ASSERT_EQ(v->tracking(), GetParam());
  const rc::BufferId b = v->create_buffer();
  for (std::uint32_t r = 0; r < 4000; ++r) {
    ASSERT_TRUE(v->respecify(b, 1024, colour_of(r)).ok());
    ASSERT_TRUE(v->paint(b, 0, kBand).ok());
    if (r % 512 == 511) ASSERT_TRUE(v->wait_submitted().ok());  // let some retire for sure
  }
  auto out = v->read_output();
  ASSERT_TRUE(out.ok());
  const rc::Gauges& g = v->gauges();
  RecordProperty("gauges", g.line());
  EXPECT_EQ(g.forced_syncs, 0u) << g.line();
  EXPECT_LT(g.parked_count_peak, 600u) << g.line();
  EXPECT_EQ(wrong_words(*out, 0, kBand, colour_of(3999)), 0);
}

INSTANTIATE_TEST_SUITE_P(Trackers, ReclaimVulkanTracking,
                         ::testing::Values(rc::SubmitTracking::timeline, rc::SubmitTracking::fences),
                         [](const auto& info) { return std::string(rc::to_string(info.param)); });

TEST(ReclaimVulkan, BadInputIsRejectedWithTheAcceptedValues) {
  auto v = open({.output_words = kBand});
  ASSERT_TRUE(v);
  const rc::BufferId b = v->create_buffer();
  auto bad_size = v->respecify(b, 6, 0);
  ASSERT_FALSE(bad_size.ok());
  EXPECT_NE(bad_size.error().detail.find("multiple of 4"), std::string::npos);
  EXPECT_FALSE(v->respecify(b + 7, 4, 0).ok());
  auto no_store = v->paint(b, 0, 1);
  ASSERT_FALSE(no_store.ok());
  EXPECT_NE(no_store.error().detail.find("no store"), std::string::npos);
  ASSERT_TRUE(v->respecify(b, 4, 0).ok());
  EXPECT_FALSE(v->paint(b, kBand - 1, 2).ok());
  EXPECT_FALSE(v->paint(b, 0, 0).ok());
  auto bad_device = rc::VulkanBuffers::create({.device_index = 1 << 20});
  ASSERT_FALSE(bad_device.ok());
  EXPECT_EQ(bad_device.error().step, "VulkanOptions::device_index");
  auto no_words = rc::VulkanBuffers::create({.output_words = 0});
  ASSERT_FALSE(no_words.ok());
  EXPECT_EQ(no_words.error().step, "VulkanOptions::output_words");
}

TEST(ReclaimVulkan, BadBudgetVariableIsAClearError) {
  ::setenv(rc::kBudgetEnvVar, "64MiB", 1);
  auto made = rc::VulkanBuffers::create({});
  ::unsetenv(rc::kBudgetEnvVar);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().step, "EXTMEM_RECLAIM_BUDGET_MB");
  EXPECT_NE(made.error().detail.find("'64MiB'"), std::string::npos);
}

TEST(ReclaimVulkan, BudgetFromTheVariableIsUsed) {
  ::setenv(rc::kBudgetEnvVar, "2", 1);
  auto v = open({.output_words = kBand});
  ::unsetenv(rc::kBudgetEnvVar);
  ASSERT_TRUE(v);
  const rc::BufferId b = v->create_buffer();
  for (std::uint32_t r = 0; r < 8; ++r) {
    ASSERT_TRUE(v->respecify(b, kMiB, r).ok());
    ASSERT_TRUE(v->paint(b, 0, kBand).ok());
  }
  EXPECT_LE(v->gauges().parked_bytes_peak, 3 * kMiB) << v->gauges().line();
  EXPECT_GE(v->gauges().forced_syncs, 2u);
}

}  // namespace
