#include "probe/sync_proof.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

namespace extmem::probe::sync {
namespace {

// Walks the steps; `armed` tells the caller whether drain() is owed.
class Walker {
 public:
  Walker(OrderingSubject& s, StepSink sink, void* user) : s_(s), sink_(sink), user_(user) {}

  void step(std::string_view name) {
    current_ = name;
    if (sink_ != nullptr) sink_(user_, name);
  }
  void pass() { out.passed.emplace_back(current_); }
  bool fail(std::string code, std::string detail) {
    out.failed_step = std::string(current_);
    out.code = std::move(code);
    out.detail = std::move(detail);
    return false;
  }
  bool fail(const Error& e) { return fail(e.shown_code(), e.message()); }

  // A look that must find the copy not landed (step 4, after the control's wait).
  bool not_landed(const char* when) {
    auto o = s_.observe();
    if (!o) return fail(o.error());
    if (o->fence_signalled || o->marker_present)
      return fail("landed-before-signal",
                  fmt::format("{}, with the signal withheld: fence {}, marker {}; the wait did not wait", when,
                              o->fence_signalled ? "signalled" : "unsignalled", o->marker_present ? "present" : "absent"));
    last_counter_ = o->counter;
    return true;
  }

  // Step 0: times the consumer's un-gated copy kCalibrationSamples times; sets out.hold.
  bool calibrate(const ProofConfig& c) {
    step(kStepCalibrate);
    std::array<double, kCalibrationSamples> us{};
    for (double& sample : us) {
      armed = true;  // until the copy is seen complete, drain() is owed
      const auto t0 = std::chrono::steady_clock::now();
      auto w = s_.ungated_copy(c.land);
      const auto t1 = std::chrono::steady_clock::now();
      if (!w) return fail(w.error());
      if (w->result == WaitResult::timed_out)
        return fail(w->code, fmt::format("the consumer's copy without the wait did not complete within {} ms",
                                         c.land.count()));
      armed = false;
      sample = std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    std::sort(us.begin(), us.end());
    out.hold = hold_for(c.hold, us[us.size() / 2], kCalibrationSamples);
    pass();
    return true;
  }

  bool run(const ProofConfig& c) {
    if (!calibrate(c)) return false;
    const std::chrono::milliseconds hold{out.hold->hold_ms};

    step(kStepHold);
    if (auto st = s_.hold(); !st) return fail(st.error());
    pass();

    step(kStepArm);
    auto before = s_.observe();
    if (!before) return fail(before.error());
    const std::optional<TimelineValue> counter_before = before->counter;
    if (auto st = s_.arm(); !st) return fail(st.error());
    armed = true;
    pass();

    // The sit is itself the control: a wait of `hold` on the consumer with the signal
    // withheld, which must time out. Until 2026-12-04 the probe slept `hold` and then ran a
    // separate 200 ms control wait; one wait proves the same and holds the signal 200 ms less.
    step(kStepNotLanded);
    auto w = s_.wait_consumer(hold);
    if (!w) return fail(w.error());
    if (!not_landed(fmt::format("{} ms after the consumer's submit", hold.count()).c_str())) return false;
    pass();

    step(kStepControl);
    out.control_code = w->code;
    if (w->result == WaitResult::signalled)
      return fail(w->code, fmt::format("the consumer's wait returned {} within {} ms although no signal was sent; "
                                       "it must time out", w->code, hold.count()));
    if (counter_before != last_counter_)
      return fail("counter-changed", fmt::format("the semaphore's counter went from {} to {} with no signal",
                                                 counter_before ? counter_before->value : 0,
                                                 last_counter_ ? last_counter_->value : 0));
    out.control_timed_out = true;
    pass();

    step(kStepRelease);
    if (auto st = s_.release(); !st) return fail(st.error());
    pass();

    step(kStepLanded);
    auto landed = s_.wait_consumer(c.land);
    if (!landed) return fail(landed.error());
    if (landed->result == WaitResult::timed_out)
      return fail(landed->code, fmt::format("the consumer did not wake within {} ms of the signal", c.land.count()));
    auto after = s_.observe();
    if (!after) return fail(after.error());
    if (!after->fence_signalled || !after->marker_present)
      return fail("not-landed-after-wait", fmt::format("the wait returned {} but fence {}, marker {}", landed->code,
                                                       after->fence_signalled ? "signalled" : "unsignalled",
                                                       after->marker_present ? "present" : "absent"));
    pass();

    step(kStepCopy);
    auto copy = s_.check_copy();
    if (!copy) return fail(copy.error());
    if (copy->words == 0) return fail("nothing-compared", "the check compared no word");
    if (copy->mismatched_words != 0)
      return fail("mismatch", fmt::format("{}/{} words differ from the producer's data, first at byte {}",
                                          copy->mismatched_words, copy->words, copy->first_mismatch.value_or(0)));
    pass();
    return true;
  }

  ProofOutcome out;
  bool armed = false;

 private:
  OrderingSubject& s_;
  StepSink sink_;
  void* user_;
  std::string_view current_;
  std::optional<TimelineValue> last_counter_;
};

}  // namespace

SyncHold hold_for(const HoldRule& rule, double ungated_us, unsigned samples) {
  SyncHold h;
  h.ungated_us = ungated_us;
  h.samples = samples;
  h.factor = rule.factor;
  h.floor_ms = static_cast<std::uint64_t>(rule.floor.count());
  h.ceiling_ms = static_cast<std::uint64_t>(rule.ceiling.count());
  const double scaled_ms = std::ceil(ungated_us * rule.factor / 1000.0);
  h.wanted_ms = std::max(h.floor_ms, scaled_ms > 0 ? static_cast<std::uint64_t>(scaled_ms) : 0);
  h.over_ceiling = h.wanted_ms > h.ceiling_ms;
  h.hold_ms = std::min(h.wanted_ms, h.ceiling_ms);
  return h;
}

ProofOutcome prove_ordering(OrderingSubject& subject, const ProofConfig& config, StepSink sink, void* user) {
  Walker w(subject, sink, user);
  w.out.ordered = w.run(config);
  if (w.armed) {
    if (sink != nullptr) sink(user, "drain the pending wait");
    w.out.drained = subject.drain();
  }
  return w.out;
}

std::string describe(const ProofOutcome& o) {
  if (o.ordered) return "ordered";
  return fmt::format("{} -> {} ({})", o.failed_step, o.code, o.detail);
}

}  // namespace extmem::probe::sync
