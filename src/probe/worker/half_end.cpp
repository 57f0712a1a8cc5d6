#include "probe/worker/half_end.h"

#include "probe/worker/peer.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {

int end_half(ChildContext& ctx, RouteReport& rep, const std::function<void()>& soak, Peer peer) {
  if (soak) soak();
  ctx.report(rep);
  if (peer == Peer::present) (void)peer_done(ctx);
  return 0;
}

int DrivingHalf::finish(const std::function<void()>& soak) {
  rep.legs.clear();
  for (const Leg* leg : legs_) rep.legs.push_back(*leg);
  return end_half(ctx_, rep, soak, peer_);
}

int DrivingHalf::finish(const SoakPlan& plan) {
  return finish([&] { maybe_soak(ctx_, rep, plan, peer_side(ctx_)); });
}

}  // namespace extmem::probe
