// The one ending of a route's driving half, the same for every route: the legs
// are final first, then (with --soak, only when the route is OK) the soak runs
// on them, then the report goes to the parent, then the peer is told it is done
// so it can leave its serve loop and exit.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "probe/route_report.h"
#include "probe/worker/child_context.h"
#include "probe/worker/soak.h"

namespace extmem::probe {

/// Whether the half has a peer process to release (single-process routes have none).
enum class Peer { present, none };

/// Ends the half: `rep.legs` must hold the final legs. Runs `soak` when set (it
/// should call maybe_soak, which soaks only an OK route and records its counts in
/// rep.facts.soak), sends `rep` to the parent (ChildContext::report), and with a
/// peer sends peer_done (a peer that is already gone is no error: the report is
/// what counts). Returns the half's exit code, 0; failures are in the report.
int end_half(ChildContext& ctx, RouteReport& rep, const std::function<void()>& soak = {}, Peer peer = Peer::present);

/// A driving half's report and its one ending: the legs named here (borrowed;
/// they must outlive this object) are reported in this order, as they stand
/// when finish() runs.
///   Leg vki = report_leg({kLegs, "vkimport"});
///   DrivingHalf half(ctx, {&vki});
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
  /// Copies the legs into rep.legs and ends the half (end_half, with `soak`).
  /// Returns the half's exit code, 0.
  int finish(const std::function<void()>& soak = {});
  /// The same, with --soak running `plan` against the peer (maybe_soak with
  /// peer_side): the one soak tail of a half whose plan exists only once its
  /// mapping does, `return view.empty() ? half.finish() : half.finish(SoakPlan{...});`.
  int finish(const SoakPlan& plan);

  RouteReport rep;

 private:
  ChildContext& ctx_;
  std::vector<const Leg*> legs_;
  Peer peer_;
};

}  // namespace extmem::probe
