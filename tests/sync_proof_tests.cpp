// Tests of the ordering proof (src/probe/sync_proof.h) against fakes of the
// producer/consumer pair: an honest one proves ordering; one whose wait does
// not wait, one whose signal never comes, one whose control wait returns
// early, one whose counter moves and one whose copy is wrong are each caught
// at the step that names them, within the proof's bounds.
#include "probe/sync_proof.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using extmem::Error;
using extmem::ErrorKind;
using extmem::Result;
using extmem::Status;
using namespace extmem::probe::sync;

// A consumer that lands when `released` (or at once, when waits do not wait).
// Bounded waits sleep their bound when nothing will come, as a driver would.
struct Fake : OrderingSubject {
  bool wait_does_not_wait = false;  // the consumer's copy runs at arm(), signal or not
  bool signal_never_comes = false;  // release() reports success but nothing is signalled
  bool control_lies = false;        // the control's wait returns "signalled" although nothing landed
  bool counter_moves = false;       // the counter advances with no signal
  bool wrong_data = false;          // the copy is the stale pattern
  bool timeline = true;

  bool armed = false, released = false, landed = false, drained = false;
  int waits = 0;
  std::vector<std::chrono::milliseconds> bounds;  // each bounded wait's bound, in order
  std::vector<std::string> calls;

  Status hold() override {
    calls.emplace_back("hold");
    return {};
  }
  Status arm() override {
    calls.emplace_back("arm");
    armed = true;
    if (wait_does_not_wait) landed = true;
    return {};
  }
  Result<Observation> observe() override {
    Observation o;
    o.fence_signalled = landed;
    o.marker_present = landed;
    if (timeline) o.counter = TimelineValue{(released && !signal_never_comes) || (counter_moves && armed) ? 1u : 0u};
    return o;
  }
  Result<Waited> wait_consumer(std::chrono::milliseconds bound) override {
    ++waits;
    bounds.push_back(bound);
    if (control_lies && !released) return Waited{WaitResult::signalled, "VK_SUCCESS"};
    if (landed) return Waited{WaitResult::signalled, "VK_SUCCESS"};
    std::this_thread::sleep_for(bound);
    return Waited{WaitResult::timed_out, "VK_TIMEOUT"};
  }
  Status release() override {
    calls.emplace_back("release");
    released = true;
    if (!signal_never_comes) landed = true;
    return {};
  }
  Result<CopyCheck> check_copy() override { return CopyCheck{wrong_data ? 1024u : 0u, 1024, wrong_data ? std::optional<std::size_t>(0) : std::nullopt}; }
  bool drain() override {
    calls.emplace_back("drain");
    drained = true;
    return true;
  }
};

constexpr ProofConfig kFast{20ms, 100ms};

// The honest pair proves ordering and the control timed out with the driver's code.
TEST(SyncProof, HonestPairIsOrdered) {
  Fake f;
  ProofOutcome o = prove_ordering(f, kFast);
  EXPECT_TRUE(o.ordered) << describe(o);
  EXPECT_TRUE(o.control_timed_out);
  EXPECT_EQ(o.control_code, "VK_TIMEOUT");
  EXPECT_EQ(o.passed.size(), 7u);
  EXPECT_EQ(f.calls, (std::vector<std::string>{"hold", "arm", "release", "drain"}));
  EXPECT_EQ(describe(o), "ordered");
  // The signal is withheld for one bounded wait of `hold`, which is the control; the other
  // wait is the landing. No sleep beside them (a sleep and a control wait held each proof 500 ms).
  EXPECT_EQ(f.bounds, (std::vector<std::chrono::milliseconds>{kFast.hold, kFast.land}));
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

// A binary semaphore has no counter; the proof works without one.
TEST(SyncProof, BinaryWithoutCounterIsOrdered) {
  Fake f;
  f.timeline = false;
  EXPECT_TRUE(prove_ordering(f, kFast).ordered);
}

}  // namespace
