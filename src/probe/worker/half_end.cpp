#include "probe/worker/half_end.h"

#include <fmt/format.h>

#include "probe/worker/measure.h"
#include "probe/worker/peer.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {

std::optional<Setup> DrivingHalf::start(const std::string& what) {
  ctx_.step("wait for " + what);
  auto setup = recv_setup(ctx_);
  if (setup && setup->ok) {
    if (measure::enabled()) {
      if (setup->info.measure) measure::merge_peer(*setup->info.measure);
      ctx_.step("measure mmap latency of the received fd");
      measure::mmap_latency(setup->fd.get(), ctx_.layout().size);
    }
    return std::move(*setup);
  }
  if (!setup) {
    rep.facts.fatal = fmt::format("{}: {}", to_string(ctx_.params().role), why_of(setup.error()));
  } else {
    rep.facts = setup->facts;
  }
  ctx_.report(rep);
  ended_ = true;
  // The owner set up fine and now serves; only its fd could not be fetched
  // (--fd-transport pidfd). Tell it the route is over, so it ends as cleanly as
  // after a full run instead of meeting a closed socket ("exited with code 1").
  if (setup && ctx_.peer().log().refused) (void)peer_done(ctx_);
  return std::nullopt;
}

bool DrivingHalf::start(const peer::SetupInfo& info, int fd) {
  if (auto s = send_setup(ctx_, info, fd); !s) {
    rep.facts.fatal = fmt::format("{}: {}", to_string(ctx_.params().role), why_of(s.error()));
    rep.facts.stop_kind = s.error().kind;
    ctx_.report(rep);
    ended_ = true;
  }
  return !ended_;
}

int DrivingHalf::stop_before_start() {
  if (peer_ == Peer::present) (void)send_setup_failure(ctx_, rep.facts);
  ctx_.report(rep);
  ended_ = true;
  return 0;
}

int DrivingHalf::finish(const std::function<void()>& before_report) {
  if (ended_) return 0;
  rep.legs.clear();
  for (const Leg* leg : legs_) rep.legs.push_back(*leg);
  if (before_report) before_report();
  ctx_.report(rep);
  // A peer that is already gone is no error: the report is what counts.
  if (peer_ == Peer::present) (void)peer_done(ctx_);
  return 0;
}

int DrivingHalf::finish(const SoakPlan& plan, const OtherSide& other, const std::function<void()>& release) {
  return finish([&] {
    maybe_soak(ctx_, rep, plan, other);
    if (release) release();
  });
}

int DrivingHalf::finish(const SoakPlan& plan) { return finish(plan, peer_side(ctx_)); }

}  // namespace extmem::probe
