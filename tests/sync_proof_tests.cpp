// Tests of the ordering proof (src/probe/sync_proof.h) against fakes of the
// producer/consumer pair: an honest one proves ordering; one whose wait does
// not wait, one whose signal never comes, one whose control wait returns
// early, one whose counter moves and one whose copy is wrong are each caught
// at the step that names them, within the proof's bounds.
#include "probe/sync_proof.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using extmem::Error;
using extmem::ErrorKind;
using extmem::Result;
using extmem::Status;
using extmem::SyncHold;
using namespace extmem::probe::sync;

// A consumer that lands `copy_time` after its copy may start: after release()
// (or at arm(), when waits do not wait). Bounded waits sleep until it lands, or
// their whole bound when it will not land within it, as a driver would.
struct Fake : OrderingSubject {
  using Clock = std::chrono::steady_clock;
  bool wait_does_not_wait = false;  // the consumer's copy runs at arm(), signal or not
  bool signal_never_comes = false;  // release() reports success but nothing is signalled
  bool control_lies = false;        // the control's wait returns "signalled" although nothing landed
  bool counter_moves = false;       // the counter advances with no signal
  bool wrong_data = false;          // the copy is the stale pattern
  bool ungated_never_lands = false; // the calibration's copy does not complete
  bool timeline = true;
  std::chrono::milliseconds copy_time{0};  // how long the consumer's copy takes once it may run

  bool armed = false, released = false, drained = false;
  std::optional<Clock::time_point> lands_at;  // when the armed copy completes; nullopt: never (yet)
  int ungated = 0;
  std::vector<std::chrono::milliseconds> bounds;  // each bounded wait's bound, in order (calibration excluded)
  std::vector<std::string> calls;

  bool landed() const { return lands_at && Clock::now() >= *lands_at; }
  // Waits like a driver for a copy landing at `at` (nullopt: never), at most `bound`.
  static Waited bounded(std::optional<Clock::time_point> at, std::chrono::milliseconds bound) {
    if (at && *at <= Clock::now() + bound) {
      std::this_thread::sleep_until(*at);
      return Waited{WaitResult::signalled, "VK_SUCCESS"};
    }
    std::this_thread::sleep_for(bound);
    return Waited{WaitResult::timed_out, "VK_TIMEOUT"};
  }

  Result<Waited> ungated_copy(std::chrono::milliseconds bound) override {
    ++ungated;
    if (ungated_never_lands) return bounded(std::nullopt, bound);
    return bounded(Clock::now() + copy_time, bound);
  }
  Status hold() override {
    calls.emplace_back("hold");
    return {};
  }
  Status arm() override {
    calls.emplace_back("arm");
    armed = true;
    if (wait_does_not_wait) lands_at = Clock::now() + copy_time;
    return {};
  }
  Result<Observation> observe() override {
    Observation o;
    o.fence_signalled = landed();
    o.marker_present = landed();
    if (timeline) o.counter = TimelineValue{(released && !signal_never_comes) || (counter_moves && armed) ? 1u : 0u};
    return o;
  }
  Result<Waited> wait_consumer(std::chrono::milliseconds bound) override {
    bounds.push_back(bound);
    if (control_lies && !released) return Waited{WaitResult::signalled, "VK_SUCCESS"};
    return bounded(lands_at, bound);
  }
  Status release() override {
    calls.emplace_back("release");
    released = true;
    if (!signal_never_comes && !lands_at) lands_at = Clock::now() + copy_time;
    return {};
  }
  Result<CopyCheck> check_copy() override { return CopyCheck{wrong_data ? 1024u : 0u, 1024, wrong_data ? std::optional<std::size_t>(0) : std::nullopt}; }
  bool drain() override {
    calls.emplace_back("drain");
    drained = true;
    return true;
  }
};

constexpr HoldRule kRule{20ms, 20, 3000ms};
constexpr ProofConfig kFast{kRule, 100ms};

// The honest pair proves ordering and the control timed out with the driver's code.
TEST(SyncProof, HonestPairIsOrdered) {
  Fake f;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_TRUE(o.ordered) << describe(o);
  EXPECT_TRUE(o.control_timed_out);
  EXPECT_EQ(o.control_code, "VK_TIMEOUT");
  EXPECT_EQ(o.passed.size(), 8u);  // the calibration and the seven steps
  EXPECT_EQ(f.calls, (std::vector<std::string>{"hold", "arm", "release", "drain"}));
  EXPECT_EQ(describe(o), "ordered");
  // The signal is withheld for one bounded wait of the calibrated hold (the floor, for a copy
  // that lands at once), which is the control; the other wait is the landing. No sleep beside them.
  EXPECT_EQ(f.bounds, (std::vector<std::chrono::milliseconds>{kRule.floor, kFast.land}));
  EXPECT_EQ(f.ungated, int(kCalibrationSamples));
  ASSERT_TRUE(o.hold.has_value());
  EXPECT_EQ(o.hold->hold_ms, 20u);
  EXPECT_EQ(o.hold->samples, kCalibrationSamples);
  EXPECT_FALSE(o.hold->over_ceiling);
}

// A wait that does not wait (the consumer copies before any signal) is FAIL at the not-landed check.
TEST(SyncProof, WaitThatDoesNotWaitFails) {
  Fake f;
  f.wait_does_not_wait = true;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepNotLanded);
  EXPECT_EQ(o.code, "landed-before-signal");
  EXPECT_NE(o.detail.find("the wait did not wait"), std::string::npos) << o.detail;
  EXPECT_TRUE(f.drained) << "pending work must be drained after a failure";
  EXPECT_EQ(std::count(f.calls.begin(), f.calls.end(), "release"), 0) << "no signal is sent after the failure";
}

// A signal that never comes times out at the landed step within the bound: it does not hang.
TEST(SyncProof, SignalThatNeverComesTimesOut) {
  Fake f;
  f.signal_never_comes = true;
  const auto start = std::chrono::steady_clock::now();
  ProofOutcome o = prove_ordering(f, kFast);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepLanded);
  EXPECT_EQ(o.code, "VK_TIMEOUT");
  EXPECT_TRUE(o.control_timed_out);
  EXPECT_LT(took, 5s) << "the proof must end within its bounds";
  EXPECT_TRUE(f.drained);
}

// A control wait that returns success with the signal withheld is FAIL naming the control step and the code.
TEST(SyncProof, ControlThatPassesWithoutSignalFails) {
  Fake f;
  f.control_lies = true;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepControl);
  EXPECT_EQ(o.code, "VK_SUCCESS");
  EXPECT_FALSE(o.control_timed_out);
}

// A timeline counter that moves with no signal is FAIL at the control.
TEST(SyncProof, CounterThatMovesWithoutSignalFails) {
  Fake f;
  f.counter_moves = true;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepControl);
  EXPECT_EQ(o.code, "counter-changed");
}

// A copy that is not exactly the producer's data is FAIL at the compare.
TEST(SyncProof, WrongDataFails) {
  Fake f;
  f.wrong_data = true;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepCopy);
  EXPECT_EQ(o.code, "mismatch");
}

// A failing driver call is reported with its step and code verbatim, and nothing armed means no drain.
TEST(SyncProof, HoldErrorCarriesTheDriverCode) {
  struct HoldFails : Fake {
    Status hold() override {
      return Error{"vkQueueSubmit(producer write + signal)", ErrorKind::driver, "VK_ERROR_DEVICE_LOST", {}};
    }
  } f;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepHold);
  EXPECT_EQ(o.code, "VK_ERROR_DEVICE_LOST");
  EXPECT_NE(o.detail.find("vkQueueSubmit(producer write + signal)"), std::string::npos);
  EXPECT_FALSE(f.drained);
}

// A slow consumer: its un-gated copy takes 40 ms, so the hold is 20 x 40 ms = 800 ms at least.
// With a wait that does not wait, its copy lands 40 ms after the submit: well inside the hold,
// where a fixed hold shorter than the copy (the old 300 ms against a slower GPU) would have
// looked before it landed and passed.
TEST(SyncProof, SlowConsumerWithoutWaitFailsUnderTheCalibratedHold) {
  Fake f;
  f.copy_time = 40ms;
  f.wait_does_not_wait = true;
  const ProofConfig short_floor{HoldRule{5ms, 20, 3000ms}, 2000ms};
  ProofOutcome o = prove_ordering(f, short_floor);
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepNotLanded);
  EXPECT_EQ(o.code, "landed-before-signal");
  ASSERT_TRUE(o.hold.has_value());
  EXPECT_GE(o.hold->ungated_us, 40'000.0);
  EXPECT_GE(o.hold->hold_ms, 800u);
  EXPECT_TRUE(f.drained);
}

// The same slow consumer, honest: the calibrated hold times out, and the copy lands after the signal.
TEST(SyncProof, SlowHonestConsumerIsOrdered) {
  Fake f;
  f.copy_time = 40ms;
  const ProofConfig short_floor{HoldRule{5ms, 20, 3000ms}, 2000ms};
  ProofOutcome o = prove_ordering(f, short_floor);
  EXPECT_TRUE(o.ordered) << describe(o);
  ASSERT_TRUE(o.hold.has_value());
  EXPECT_EQ(f.bounds.front(), std::chrono::milliseconds(o.hold->hold_ms));
}

// A calibrated hold above the ceiling is capped and says so; the proof still runs with the cap.
TEST(SyncProof, HoldOverTheCeilingIsCappedAndReported) {
  Fake f;
  f.copy_time = 30ms;
  const ProofConfig low_ceiling{HoldRule{5ms, 20, 100ms}, 2000ms};
  ProofOutcome o = prove_ordering(f, low_ceiling);
  EXPECT_TRUE(o.ordered) << describe(o);
  ASSERT_TRUE(o.hold.has_value());
  EXPECT_TRUE(o.hold->over_ceiling);
  EXPECT_EQ(o.hold->hold_ms, 100u);
  EXPECT_GE(o.hold->wanted_ms, 600u);
  EXPECT_EQ(f.bounds.front(), 100ms);
}

// A consumer whose un-gated copy never completes fails at the calibration, within its bound,
// and its pending work is drained; no signal is held.
TEST(SyncProof, UngatedCopyThatNeverLandsFailsAtTheCalibration) {
  Fake f;
  f.ungated_never_lands = true;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_FALSE(o.ordered);
  EXPECT_EQ(o.failed_step, kStepCalibrate);
  EXPECT_EQ(o.code, "VK_TIMEOUT");
  EXPECT_FALSE(o.hold.has_value());
  EXPECT_TRUE(f.drained);
  EXPECT_EQ(std::count(f.calls.begin(), f.calls.end(), "hold"), 0);
}

// The rule itself: the floor for fast copies, factor x the copy above it, rounded up to a
// whole millisecond, capped at the ceiling with over_ceiling set.
TEST(SyncProof, HoldRuleArithmetic) {
  const HoldRule r{20ms, 20, 3000ms};
  EXPECT_EQ(hold_for(r, 400.0, 3).hold_ms, 20u);    // 8 ms < floor
  EXPECT_EQ(hold_for(r, 1000.0, 3).hold_ms, 20u);   // exactly the floor
  EXPECT_EQ(hold_for(r, 1001.0, 3).hold_ms, 21u);   // 20.02 ms, rounded up
  EXPECT_EQ(hold_for(r, 50'000.0, 3).hold_ms, 1000u);
  const SyncHold capped = hold_for(r, 200'000.0, 3);
  EXPECT_EQ(capped.wanted_ms, 4000u);
  EXPECT_EQ(capped.hold_ms, 3000u);
  EXPECT_TRUE(capped.over_ceiling);
  EXPECT_FALSE(hold_for(r, 150'000.0, 3).over_ceiling);  // 3000 ms is at the ceiling, not over it
}

// A binary semaphore has no counter; the proof works without one.
TEST(SyncProof, BinaryWithoutCounterIsOrdered) {
  Fake f;
  f.timeline = false;
  EXPECT_TRUE(prove_ordering(f, kFast).ordered);
}

}  // namespace
