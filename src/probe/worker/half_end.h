// The one start and the one ending of a route's driving half, the same for every
// route. The start: wait for the peer's setup (or, for a half that allocates
// itself, send its own); a failed start is reported at once, with the facts and no
// legs, and ends the half. The ending: the legs are final first, then (with
// --soak, only when the route is OK) the soak runs on them, then the report goes
// to the parent, then the peer is told it is done so it can leave its serve loop
// and exit.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "probe/route_report.h"
#include "probe/worker/child_context.h"
#include "probe/worker/peer.h"
#include "probe/worker/soak.h"

namespace extmem::probe {

/// Whether the half has a peer process to release (single-process routes have none).
enum class Peer { present, none };

/// A driving half's report, its one start and its one ending: the legs named here
/// (borrowed; they must outlive this object) are reported in this order, as they
/// stand when finish() runs. Every return of the half goes through it, most as
/// `return half.finish(…);` (after a failed start finish() sends nothing more):
///   Leg vki = report_leg({kLegs, "vkimport"});
///   DrivingHalf half(ctx, {&vki});
///   auto setup = half.start("the server's export");
///   if (!setup) return half.finish();
///   ... half.rep.facts / half.rep.detail ...
///   return half.finish();
class DrivingHalf {
 public:
  DrivingHalf(ChildContext& ctx, std::initializer_list<const Leg*> legs, Peer peer = Peer::present)
      : ctx_(ctx), legs_(legs), peer_(peer) {}
  DrivingHalf(const DrivingHalf&) = delete;
  DrivingHalf& operator=(const DrivingHalf&) = delete;

  /// Reports `leg` after the others: a leg only some rows of a shared half have.
  void also_report(const Leg& leg) { legs_.push_back(&leg); }

  /// The start of a half whose peer sets up first (it allocates or exports, this
  /// half drives): step "wait for <what>", then the setup (with --measure the
  /// peer's figures are merged and the received fd's mmap latency measured). On
  /// a failed or broken setup the report (the setup's facts, no legs) is sent and
  /// nullopt returned; the half is over. When only the fd could not be fetched
  /// (--fd-transport pidfd), the serving peer is also sent peer_done.
  std::optional<Setup> start(const std::string& what);
  /// The start of a half that sets up itself and drives (it allocates, the peer
  /// maps what it receives): sends `info` and `fd` (borrowed) to the peer. A
  /// failed send is the row's fatal fact ("<role>: <why>", with its kind), is
  /// reported without legs and returns false; the half is over.
  bool start(const peer::SetupInfo& info, int fd);
  /// A half that sets up itself and could not (rep.facts say why): the peer, when
  /// there is one, gets a failed setup with those facts, and the report holds the
  /// facts alone (no legs). Returns 0; the half is over.
  int stop_before_start();

  /// Ends the half: copies the legs into rep.legs, runs `before_report` when set
  /// (the soak tails below), sends rep to the parent (ChildContext::report), and
  /// with a peer sends it peer_done so it leaves its serve loop. After a failed
  /// start it sends nothing. Returns the half's exit code, 0: failures are in the report.
  int finish(const std::function<void()>& before_report = {});
  /// The one soak tail: the same, with --soak running `plan` against `other`
  /// (maybe_soak: only an OK route soaks; its counts go in rep.facts.soak), then
  /// `release`, still before the report (objects that must go first: a GL buffer
  /// before its context, both before the report).
  int finish(const SoakPlan& plan, const OtherSide& other, const std::function<void()>& release = {});
  /// With the peer as the other side (peer_side): a half whose plan exists only
  /// once its mapping does, `return view.empty() ? half.finish() : half.finish(SoakPlan{...});`.
  int finish(const SoakPlan& plan);

  RouteReport rep;

 private:
  ChildContext& ctx_;
  std::vector<const Leg*> legs_;
  Peer peer_;
  bool ended_ = false;  ///< the start failed and was reported
};

}  // namespace extmem::probe
