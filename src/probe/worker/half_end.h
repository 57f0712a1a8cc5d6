// The one ending of a route's driving half, the same for every route: the legs
// are final first, then (with --soak, only when the route is OK) the soak runs
// on them, then the report goes to the parent, then the peer is told it is done
// so it can leave its serve loop and exit.
#pragma once

#include <functional>

#include "probe/route_report.h"
#include "probe/worker/child_context.h"

namespace extmem::probe {

/// Whether the half has a peer process to release (single-process routes have none).
enum class Peer { present, none };

/// Ends the half: `rep.legs` must hold the final legs. Runs `soak` when set (it
/// should call maybe_soak, which soaks only an OK route and records its counts in
/// rep.facts.soak), sends `rep` to the parent (ChildContext::report), and with a
/// peer sends peer_done (a peer that is already gone is no error: the report is
/// what counts). Returns the half's exit code, 0; failures are in the report.
int end_half(ChildContext& ctx, RouteReport& rep, const std::function<void()>& soak = {}, Peer peer = Peer::present);

}  // namespace extmem::probe
