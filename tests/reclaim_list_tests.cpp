// Unit tests of extmem::reclaim's DeferredReleaseList, BindingMemo and budget
// parsing against a scripted submit tracker (no GPU): each death proof alone,
// the prefix sweep's fence-poll cost, both watermarks, the destroy epoch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "extmem/reclaim/binding_memo.h"
#include "extmem/reclaim/deferred_list.h"
#include "extmem/reclaim/vulkan.h"

namespace rc = extmem::reclaim;

namespace {

// A tracker whose submissions and retirements the test scripts by hand.
class ScriptedTracker : public rc::SubmitTracker {
 public:
  rc::SubmitIndex sync_point() const override { return {open_ ? last_submitted_ + 1 : last_submitted_}; }
  bool is_complete(rc::SubmitIndex index) override {
    ++polls;
    return index.value <= completed_;
  }
  extmem::Status flush_and_wait(rc::SubmitIndex index) override {
    ++waits;
    if (fail_waits)
      return extmem::Error{"vkWaitForFences", extmem::ErrorKind::driver, "VK_ERROR_DEVICE_LOST", "submit index 1"};
    if (open_ && index.value == last_submitted_ + 1) submit();
    completed_ = std::max(completed_, index.value);
    return {};
  }
  void open() { open_ = true; }
  void submit() {
    if (open_) ++last_submitted_;
    open_ = false;
  }
  void discard() { open_ = false; }
  void retire(std::uint64_t index) { completed_ = index; }

  int polls = 0;
  int waits = 0;
  bool fail_waits = false;

 private:
  bool open_ = false;
  std::uint64_t last_submitted_ = 0;
  std::uint64_t completed_ = 0;
};

struct Fixture {
  explicit Fixture(rc::ListOptions options = {})
      : list(tracker, [this](rc::StoreToken t, std::uint64_t) { destroyed.push_back(t); }, options) {}
  // Makes a store and releases it with the given last use.
  extmem::Result<bool> release(rc::StoreToken t, std::uint64_t serial, std::uint64_t bytes = 64) {
    list.store_created();
    return list.release(t, rc::FrameSerial{serial}, bytes);
  }
  ScriptedTracker tracker;
  std::vector<rc::StoreToken> destroyed;
  rc::DeferredReleaseList list;
};

TEST(ReclaimList, Proof1UnusedStoreIsDestroyedAtOnceWithoutPolling) {
  Fixture f;
  f.tracker.open();
  auto r = f.release(7, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(f.destroyed, std::vector<rc::StoreToken>{7});
  EXPECT_EQ(f.list.gauges().parked_count_peak, 0u);
  EXPECT_EQ(f.tracker.polls, 0);
  EXPECT_EQ(f.list.gauges().live_stores, 0u);
}

TEST(ReclaimList, Proof2ParkedStoreDiesWhenItsSubmissionRetires) {
  Fixture f;
  f.tracker.open();
  auto r = f.release(1, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  f.tracker.submit();  // index 1 in flight
  EXPECT_EQ(f.list.sweep(), 0u);
  EXPECT_TRUE(f.destroyed.empty());
  f.tracker.retire(1);
  EXPECT_EQ(f.list.sweep(), 1u);
  EXPECT_EQ(f.destroyed, std::vector<rc::StoreToken>{1});
}

TEST(ReclaimList, Proof2IgnoresWorkRecordedAfterParking) {
  // Parked under index 1; index 2 (recorded later) still running does not keep it.
  Fixture f;
  f.tracker.open();
  ASSERT_TRUE(f.release(1, 1).ok());
  f.tracker.submit();
  f.tracker.open();
  f.tracker.retire(1);
  EXPECT_EQ(f.list.sweep(), 1u);
}

TEST(ReclaimList, Proof3DiscardedRecordingsIndexIsFreedByTheIdleProof) {
  Fixture f;
  f.tracker.open();  // recording for index 1
  ASSERT_TRUE(f.release(3, 1).ok());
  f.tracker.discard();  // index 1 will never be submitted, so never complete
  EXPECT_EQ(f.tracker.sync_point().value, 0u);
  EXPECT_FALSE(f.tracker.is_complete(rc::SubmitIndex{1}));
  EXPECT_EQ(f.list.sweep(), 1u);
  EXPECT_EQ(f.destroyed, std::vector<rc::StoreToken>{3});
}

TEST(ReclaimList, Proof3DoesNotFireWhileOlderWorkIsInFlight) {
  Fixture f;
  f.tracker.open();
  ASSERT_TRUE(f.release(1, 1).ok());
  f.tracker.submit();  // index 1 in flight
  f.tracker.open();    // index 2
  ASSERT_TRUE(f.release(2, 1).ok());
  f.tracker.discard();  // sync point back to 1, still running
  EXPECT_EQ(f.list.sweep(), 0u);
  f.tracker.retire(1);
  EXPECT_EQ(f.list.sweep(), 2u);  // 1 by proof 2, 2 (raised index) by proof 3
}

TEST(ReclaimList, PrefixSweepStopsAtFirstIncompleteEntryWithFewPolls) {
  Fixture f;
  rc::StoreToken t = 0;
  for (int batch = 0; batch < 3; ++batch) {
    f.tracker.open();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(f.release(t++, 1).ok());
    f.tracker.submit();
  }
  ASSERT_EQ(f.list.gauges().parked_count, 30u);
  f.tracker.retire(2);
  f.tracker.polls = 0;
  EXPECT_EQ(f.list.sweep(), 20u);
  // One poll for index 1, one for index 2, one for the first entry of index 3; none per entry.
  EXPECT_EQ(f.tracker.polls, 3);
  EXPECT_EQ(f.list.gauges().parked_count, 10u);
  ASSERT_EQ(f.destroyed.size(), 20u);
  for (rc::StoreToken i = 0; i < 20; ++i) EXPECT_EQ(f.destroyed[i], i);  // parking order
  f.tracker.polls = 0;
  EXPECT_EQ(f.list.sweep(), 0u);
  EXPECT_EQ(f.tracker.polls, 1);  // a sweep with nothing dead costs one poll
}

TEST(ReclaimList, ByteWatermarkForcesOneSyncAndBoundsThePeak) {
  Fixture f(rc::ListOptions{1000, rc::ReleasePolicy::proven_dead});
  f.tracker.open();
  for (rc::StoreToken t = 0; t < 10; ++t) ASSERT_TRUE(f.release(t, 1, 100).ok());
  EXPECT_EQ(f.list.gauges().forced_syncs, 0u);
  EXPECT_EQ(f.list.gauges().parked_bytes, 1000u);  // at the budget is not over it
  auto r = f.release(10, 1, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(f.list.gauges().forced_syncs, 1u);
  EXPECT_EQ(f.tracker.waits, 1);
  EXPECT_EQ(f.list.gauges().parked_bytes, 0u);
  EXPECT_EQ(f.list.gauges().parked_bytes_peak, 1100u);  // budget + one store
  EXPECT_EQ(f.destroyed.size(), 11u);
}

TEST(ReclaimList, CountWatermarkForcesASyncForSmallStores) {
  Fixture f(rc::ListOptions{1ull << 30, rc::ReleasePolicy::proven_dead});
  f.tracker.open();
  for (rc::StoreToken t = 0; t < rc::kParkedCountCeiling; ++t) ASSERT_TRUE(f.release(t, 1, 16).ok());
  EXPECT_EQ(f.list.gauges().forced_syncs, 0u);
  ASSERT_TRUE(f.release(5000, 1, 16).ok());
  EXPECT_EQ(f.list.gauges().forced_syncs, 1u);
  EXPECT_EQ(f.list.gauges().parked_count_peak, rc::kParkedCountCeiling + 1);
  EXPECT_EQ(f.list.gauges().parked_count, 0u);
  EXPECT_EQ(f.list.gauges().live_stores_peak, rc::kParkedCountCeiling + 1);
}

TEST(ReclaimList, BudgetZeroTurnsBothWatermarksOff) {
  Fixture f(rc::ListOptions{0, rc::ReleasePolicy::proven_dead});
  f.tracker.open();
  for (rc::StoreToken t = 0; t < 2000; ++t) ASSERT_TRUE(f.release(t, 1, 1 << 20).ok());
  EXPECT_EQ(f.list.gauges().forced_syncs, 0u);
  EXPECT_EQ(f.list.gauges().parked_count, 2000u);
  EXPECT_EQ(f.tracker.waits, 0);
  // Proofs still work.
  f.tracker.submit();
  f.tracker.retire(1);
  EXPECT_EQ(f.list.sweep(), 2000u);
}

TEST(ReclaimList, FailedForcedSyncIsAnErrorNamingTheSite) {
  Fixture f(rc::ListOptions{100, rc::ReleasePolicy::proven_dead});
  f.tracker.open();
  f.tracker.fail_waits = true;
  ASSERT_TRUE(f.release(1, 1, 100).ok());
  auto r = f.release(2, 1, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().step, "deferred-watermark");
  EXPECT_EQ(r.error().kind, extmem::ErrorKind::driver);
  EXPECT_EQ(r.error().code, "VK_ERROR_DEVICE_LOST");
  EXPECT_NE(r.error().detail.find("vkWaitForFences"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("200 bytes in 2 parked stores"), std::string::npos) << r.error().detail;
  EXPECT_EQ(f.list.gauges().parked_count, 2u);  // nothing destroyed on a failed sync
  EXPECT_TRUE(f.destroyed.empty());
}

TEST(ReclaimList, EpochIncrementsOnEveryDestructionKindAndNeverResets) {
  Fixture f(rc::ListOptions{150, rc::ReleasePolicy::proven_dead});
  std::vector<std::uint64_t> seen{f.list.destroy_epoch()};
  auto grew = [&](const char* what) {
    EXPECT_GT(f.list.destroy_epoch(), seen.back()) << what;
    seen.push_back(f.list.destroy_epoch());
  };
  ASSERT_TRUE(f.release(1, 0).ok());  // immediate destroy
  grew("immediate destroy");
  f.tracker.open();
  ASSERT_TRUE(f.release(2, 1, 100).ok());
  f.tracker.submit();
  EXPECT_EQ(f.list.sweep(), 0u);
  EXPECT_EQ(f.list.destroy_epoch(), seen.back()) << "a sweep that destroyed nothing";
  f.tracker.retire(1);
  ASSERT_EQ(f.list.sweep(), 1u);
  grew("sweep");
  f.tracker.open();
  ASSERT_TRUE(f.release(3, 1, 100).ok());
  ASSERT_TRUE(f.release(4, 1, 100).ok());  // 200 > 150: forced sync, then its sweep
  EXPECT_EQ(f.list.gauges().forced_syncs, 1u);
  grew("forced-sync sweep");
  f.tracker.open();
  ASSERT_TRUE(f.release(5, 1, 10).ok());
  ASSERT_EQ(f.list.destroy_all(), 1u);
  grew("destroy-all");
  f.list.store_created();
  f.list.destroy_unparked(6, 10);
  grew("destroy unparked");
  f.tracker.open();
  ASSERT_TRUE(f.release(7, 1, 10).ok());
  ASSERT_TRUE(f.list.shutdown().ok());
  grew("shutdown");
  EXPECT_EQ(f.destroyed.size(), 7u);
  EXPECT_EQ(f.list.gauges().live_stores, 0u);
}

TEST(ReclaimList, FrameBucketedBaselineKeepsEverythingUntilTheFrameBoundary) {
  Fixture f(rc::ListOptions{100, rc::ReleasePolicy::frame_bucketed});
  f.tracker.open();
  for (rc::StoreToken t = 0; t < 50; ++t) ASSERT_TRUE(f.release(t, t % 2, 100).ok());
  EXPECT_TRUE(f.destroyed.empty());  // not even the unused ones, and no watermark
  EXPECT_EQ(f.list.gauges().parked_bytes_peak, 5000u);
  EXPECT_EQ(f.list.gauges().forced_syncs, 0u);
  ASSERT_TRUE(f.list.end_frame().ok());
  EXPECT_EQ(f.destroyed.size(), 50u);
  EXPECT_EQ(f.tracker.waits, 1);
}

TEST(ReclaimList, GaugesLineHasEveryGauge) {
  Fixture f;
  f.tracker.open();
  ASSERT_TRUE(f.release(1, 1, 4096).ok());
  f.list.store_created();
  const std::string line = f.list.gauges().line();
  EXPECT_EQ(line,
            "live_stores=2 live_stores_peak=2 parked_bytes=4096 parked_bytes_peak=4096 parked_count=1 "
            "parked_count_peak=1 forced_syncs=0 destroy_epoch=0 fence_polls=1");
}

TEST(ReclaimBudget, ParsesWholeMiB) {
  EXPECT_EQ(*rc::parse_budget_mib("64"), 64ull << 20);
  EXPECT_EQ(*rc::parse_budget_mib("0"), 0u);
  EXPECT_EQ(*rc::parse_budget_mib("1048576"), 1ull << 40);
}

TEST(ReclaimBudget, RejectsAnythingElseNamingTheVariableAndTheAcceptedValues) {
  for (const char* bad : {"", "-1", "12MB", " 5", "5 ", "1.5", "0x10", "1048577", "99999999999"}) {
    auto r = rc::parse_budget_mib(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().step, "EXTMEM_RECLAIM_BUDGET_MB");
    EXPECT_EQ(r.error().kind, extmem::ErrorKind::invalid_argument);
    EXPECT_NE(r.error().detail.find(std::string("'") + bad + "'"), std::string::npos) << r.error().detail;
    EXPECT_NE(r.error().detail.find("whole number of MiB from 0 to 1048576"), std::string::npos);
  }
}

TEST(ReclaimBudget, ApiValueThenEnvironmentThenDefault) {
  ::unsetenv(rc::kBudgetEnvVar);
  EXPECT_EQ(*rc::resolve_budget(std::nullopt), rc::kDefaultBudgetBytes);
  ::setenv(rc::kBudgetEnvVar, "8", 1);
  EXPECT_EQ(*rc::resolve_budget(std::nullopt), 8ull << 20);
  EXPECT_EQ(*rc::resolve_budget(4096), 4096u);
  ::setenv(rc::kBudgetEnvVar, "eight", 1);
  auto bad = rc::resolve_budget(std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().step, "EXTMEM_RECLAIM_BUDGET_MB");
  EXPECT_TRUE(rc::resolve_budget(4096).ok());  // an explicit value does not read the variable
  ::unsetenv(rc::kBudgetEnvVar);
}

// Scenario 4 of docs/reclaim.md on the list and memo alone, with the LIFO
// handle double: exact handle reuse, so the memo result is deterministic.
struct AbaOutcome {
  bool handle_reused = false;
  int colour = 0;
};

AbaOutcome run_aba(rc::MemoKeying keying) {
  rc::LifoHandleSource handles;
  Fixture f;
  std::vector<std::uint64_t> handle_of_token(10, 0);
  rc::DeferredReleaseList list(
      f.tracker, [&](rc::StoreToken t, std::uint64_t) { handles.release(handle_of_token[t]); }, {});
  rc::BindingMemo<int> memo(keying);
  std::vector<int> retired;
  auto retire = [&](int v) { retired.push_back(v); };
  constexpr int kColourA = 0xA, kColourB = 0xB;
  constexpr std::uint64_t kRange = 256;
  // Use S1 (colour A): the memo records S1's handle.
  handle_of_token[1] = handles.acquire(0);
  list.store_created();
  f.tracker.open();
  if (!memo.find(handle_of_token[1], 0, kRange, list.destroy_epoch(), retire))
    memo.insert(handle_of_token[1], 0, kRange, kColourA, retire);
  // Orphan S1, submit without waiting, retire that submission.
  EXPECT_TRUE(list.release(1, rc::FrameSerial{1}, kRange).ok());
  f.tracker.submit();
  f.tracker.retire(1);
  // Park another (used) store: the sweep destroys S1.
  handle_of_token[2] = handles.acquire(0);
  list.store_created();
  f.tracker.open();
  EXPECT_TRUE(list.release(2, rc::FrameSerial{1}, kRange).ok());
  // A new store gets S1's handle value, colour B; use it.
  handle_of_token[3] = handles.acquire(0);
  AbaOutcome out;
  out.handle_reused = handle_of_token[3] == handle_of_token[1];
  std::optional<int> hit = memo.find(handle_of_token[3], 0, kRange, list.destroy_epoch(), retire);
  if (!hit) memo.insert(handle_of_token[3], 0, kRange, kColourB, retire);
  out.colour = hit ? *hit : kColourB;
  list.store_created();
  EXPECT_TRUE(list.shutdown().ok());
  return out;
}

TEST(ReclaimMemo, EpochInTheKeyMissesAReusedHandle) {
  AbaOutcome out = run_aba(rc::MemoKeying::handle_range_epoch);
  EXPECT_TRUE(out.handle_reused);
  EXPECT_EQ(out.colour, 0xB);
}

TEST(ReclaimMemo, NegativeControlWithoutTheEpochReadsTheDeadStoresColour) {
  AbaOutcome out = run_aba(rc::MemoKeying::handle_range_only);
  EXPECT_TRUE(out.handle_reused);
  EXPECT_EQ(out.colour, 0xA);  // the failure the epoch exists to prevent
}

TEST(ReclaimMemo, LifoHandleSourceReusesTheLastReleasedValueFirst) {
  rc::LifoHandleSource h;
  const auto a = h.acquire(0), b = h.acquire(0);
  EXPECT_NE(a, b);
  h.release(a);
  h.release(b);
  EXPECT_EQ(h.acquire(0), b);
  EXPECT_EQ(h.acquire(0), a);
}

}  // namespace
