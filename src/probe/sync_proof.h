// The proof that a cross-process GPU wait waited (docs/probe.md, "S1"), as a
// small piece that knows no driver: the S1 routes implement OrderingSubject
// over Vulkan, GL or CUDA, and prove_ordering() walks the same steps for all of
// them, so the logic is unit-tested against fakes (tests/sync_proof_tests.cpp)
// and the routes only supply the driver calls.
//
// The steps, in order:
//   0. calibrate     the consumer's same work without the wait (copy + marker),
//                    timed from submit to seen complete, kCalibrationSamples
//                    times; the hold of step 3 is max(floor, factor x median),
//                    so a consumer whose wait does not wait lands well inside it
//                    on any GPU, fast or slow (HoldRule)
//   1. hold          the producer arms a signal that its host keeps back
//   2. arm           the consumer submits GPU work that waits on the imported
//                    semaphore, then copies the region out and writes a marker
//   3. sit           a bounded wait of the calibrated hold on the consumer,
//                    with the signal withheld: the control of step 5
//   4. not-landed    the consumer's copy must not have landed: fence unsignalled,
//                    marker absent (a consumer that went ahead is FAIL here)
//   5. control       the wait of step 3 must have timed out, and the semaphore's
//                    counter (timeline) must be unchanged
//   6. release       the producer's GPU writes the region and signals
//   7. landed        a bounded wait on the consumer must now succeed (a signal
//                    that never arrives is a timeout here, never a hang)
//   8. copy          the consumer's copy holds exactly the producer's data
// Whatever happens, drain() is called last when arm succeeded, so no GPU work
// is left waiting on a semaphore when the route releases its objects.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/core/verdict.h"

namespace extmem::probe::sync {

/// A timeline semaphore's payload value (VkSemaphore counter, CUDA's external
/// semaphore fence value). Distinct from sizes and counts so they cannot be mixed.
struct TimelineValue {
  std::uint64_t value = 0;
  bool operator==(const TimelineValue&) const = default;
};

/// What the probe can see of the consumer without waiting.
struct Observation {
  bool fence_signalled = false;  ///< the consumer's submission completed (vkGetFenceStatus == VK_SUCCESS, ...)
  bool marker_present = false;   ///< the marker the consumer writes after its copy is in place
  /// The imported semaphore's counter, for a timeline semaphore; nullopt for a binary one.
  std::optional<TimelineValue> counter;
};

/// The outcome of one bounded wait.
enum class WaitResult {
  signalled,  ///< the waited-for work completed within the bound
  timed_out,  ///< the bound passed first (VK_TIMEOUT, CUDA_ERROR_NOT_READY after polling, ...)
};

/// What a bounded wait returned, with the driver's code verbatim ("VK_TIMEOUT", "VK_SUCCESS").
struct Waited {
  WaitResult result = WaitResult::timed_out;
  std::string code;
};

/// The consumer's copy compared with the producer's data.
struct CopyCheck {
  std::size_t mismatched_words = 0;  ///< 32-bit words of the copy that differ from the producer's pattern
  std::size_t words = 0;             ///< 32-bit words compared
  std::optional<std::size_t> first_mismatch;  ///< byte offset within the region, when any
};

/// One route's producer and consumer, seen from the side that drives the proof.
/// Every call must return within a bound of its own (a message over the socket
/// with a receive timeout, a driver wait with a timeout): prove_ordering() has no
/// way to interrupt a call that blocks. Errors carry the step and driver code.
class OrderingSubject {
 public:
  virtual ~OrderingSubject() = default;
  /// Step 1: the producer arms the held signal (binary: submits write + signal
  /// gated behind a local timeline semaphore its host has not signalled).
  virtual Status hold() = 0;
  /// Step 0: the consumer submits the same copy -> marker as arm() without the
  /// semaphore wait, on the same queue or stream, and waits for it at most
  /// `bound`; before returning it clears the marker (and the copy) so that
  /// arm() starts from an empty destination. prove_ordering() times the call.
  virtual Result<Waited> ungated_copy(std::chrono::milliseconds bound) = 0;
  /// Step 2: the consumer submits wait -> copy -> marker. Must not block.
  virtual Status arm() = 0;
  /// Steps 4, 5 and 7: a look at the consumer that does not wait.
  virtual Result<Observation> observe() = 0;
  /// Steps 3 and 7: waits for the consumer's submission at most `bound`.
  virtual Result<Waited> wait_consumer(std::chrono::milliseconds bound) = 0;
  /// Step 6: the producer writes the region on its GPU and signals.
  virtual Status release() = 0;
  /// Step 8: compares the consumer's copy with what the producer wrote.
  virtual Result<CopyCheck> check_copy() = 0;
  /// After arm() succeeded, last in every case: lets pending work finish (the
  /// producer signals if it has not) and waits for it within a bound. Returns
  /// false when the work could not be drained: the caller must then leave the
  /// objects it waits on alive rather than destroy them under the GPU.
  virtual bool drain() = 0;
};

/// How long the signal is withheld (steps 3-5), from the consumer's own speed:
/// hold = max(floor, factor x the median un-gated copy), at most `ceiling`.
/// A consumer whose wait does not wait lands about one un-gated copy after its
/// submit, so `factor` is the margin by which the hold outlasts it. The floor
/// covers scheduling noise of the host (a preempted thread, a busy machine),
/// which the GPU's speed does not predict. Until 2026-12-05 the hold was a fixed
/// 300 ms: 2.1 s of an H200 default run, where an un-gated copy lands in 0.2-0.8 ms,
/// and too short on a GPU slower than 300 ms.
struct HoldRule {
  std::chrono::milliseconds floor{20};
  unsigned factor = 20;
  std::chrono::milliseconds ceiling{3000};
};

/// How many un-gated copies step 0 times (the first also warms the path up; the median is used).
inline constexpr unsigned kCalibrationSamples = 3;

/// The bounds of one proof.
struct ProofConfig {
  HoldRule hold;                           ///< steps 3-5: the withheld signal's bounded wait
  std::chrono::milliseconds land{5000};    ///< step 7 (and each step-0 copy): how long the consumer may take
};

/// The hold `rule` gives for a median un-gated copy of `ungated_us` microseconds
/// (`samples` of them): every field of SyncHold. Pure, for the tests.
SyncHold hold_for(const HoldRule& rule, double ungated_us, unsigned samples);

/// The step names prove_ordering() reports, in order: a stable interface (they
/// appear in why: texts and in the tests).
inline constexpr std::string_view kStepCalibrate = "time the consumer's un-gated copy";
inline constexpr std::string_view kStepHold = "hold the producer's signal";
inline constexpr std::string_view kStepArm = "consumer submits wait + copy + marker";
inline constexpr std::string_view kStepNotLanded = "check the consumer's copy has not landed";
inline constexpr std::string_view kStepControl = "control: bounded wait without a signal";
inline constexpr std::string_view kStepRelease = "producer writes the region and signals";
inline constexpr std::string_view kStepLanded = "wait for the consumer's copy after the signal";
inline constexpr std::string_view kStepCopy = "compare the consumer's copy with the producer's data";

/// What the proof found.
struct ProofOutcome {
  bool ordered = false;          ///< every step passed: the wait waited and the data is the producer's
  std::string failed_step;       ///< one of the kStep* names; empty when ordered
  std::string code;              ///< the driver's code or our finding at that step, verbatim
  std::string detail;            ///< free text: what was seen
  bool control_timed_out = false;     ///< step 5 timed out as it must
  std::string control_code;           ///< the code the control's wait returned ("VK_TIMEOUT")
  bool drained = true;           ///< drain() succeeded (or arm() never ran)
  std::optional<SyncHold> hold;  ///< the calibrated hold; nullopt when step 0 failed
  std::vector<std::string> passed;    ///< the steps that passed, in order
};

/// Called with each step name before it is attempted (ChildContext::step), so a
/// hang or crash is attributed to it.
using StepSink = void (*)(void* user, std::string_view step);

/// Runs steps 1-8 on `subject` within `config`'s bounds; returns at the first
/// failing step (after drain()). Never throws; never waits without a bound of
/// its own (the subject's calls must be bounded, see OrderingSubject).
ProofOutcome prove_ordering(OrderingSubject& subject, const ProofConfig& config, StepSink sink = nullptr,
                            void* user = nullptr);

/// "ordered" or "<step> -> <code> (<detail>)", for a why: text and the detail.
std::string describe(const ProofOutcome& outcome);

}  // namespace extmem::probe::sync
