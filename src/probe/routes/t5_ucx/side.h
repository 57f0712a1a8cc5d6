// What both T5 (UCX) rows share (issue #32, docs/probe.md "T5"): the owner
// half, which allocates and registers memory with UCX and serves it, and the
// driving half's connection to it. The conversation, over the route's peer
// socket: the owner's setup (no fd: UCX moves the bytes), then the route op
// "ucx-connect", answered with the memory's address, its packed remote key and
// the owner's worker address (hex), and "ucx-mapped" once the driver holds the
// memory; then the shared checks (peer.h) on the owner's view.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "probe/routes.h"
#include "probe/routes/t5_ucx/path.h"
#include "probe/worker/child_context.h"
#include "ucx/info.h"
#include "ucx/ucx.h"

namespace extmem::probe::t5 {

/// The owner half (client role) of both rows: opens UCX (a context and a
/// worker), allocates layout.size bytes with ucp_mem_map(ALLOCATE), writes
/// region A, sends the setup, then serves the driver's checks on its view
/// while a thread progresses its worker (transports such as tcp need the
/// target's progress for RMA). Without UCX it sends a failed setup whose facts
/// SKIP the row ("no UCX (...)"). Test-only fault `staleremap` (kStaleFault).
int owner_serve(ChildContext& ctx);

/// The owner's test-only fault: after packing the key it hands out, the owner
/// allocates again, copies the bytes and serves the new memory; once the
/// driver says it has mapped the first, it unmaps that one.
constexpr FaultDef kStaleFault{
    "staleremap", Role::client, "ucp_mem_map(ALLOCATE)",
    "the owner unmaps the memory whose key it handed out and serves a remapped copy: the driver's mapping is "
    "stale, its write of region B never reaches the owner, and the row must not be OK"};

/// A driving half's connection to the owner. Members release in reverse order:
/// the key, the endpoint, then the worker.
struct Connection {
  std::unique_ptr<ucx::Worker> worker;
  std::unique_ptr<ucx::Endpoint> endpoint;
  std::unique_ptr<ucx::RemoteKey> key;
  std::uint64_t remote_address = 0;  ///< the owner's memory, in the owner's address space
};

/// Opens UCX, asks the owner for "ucx-connect", connects an endpoint to its
/// worker and unpacks its key (each step announced on `ctx`). Errors: UCX's
/// (no_driver without it), the peer channel's, protocol on a malformed reply.
Result<Connection> connect_owner(ChildContext& ctx);

/// Tells the owner the memory is held ("ucx-mapped"). Errors: the channel's.
Status say_mapped(ChildContext& ctx);

/// The SKIP reason of a row without UCX: "no UCX (<step>: <detail>)".
std::string no_ucx_reason(const Error& e);

/// The path facts of a run: `took`, UCX's lanes, --expect-transport, UCX_TLS,
/// and (only when `took` is not as expected, the cost of a second context)
/// the shared-memory transports UCX has here with every transport enabled.
PathFacts path_facts(const ChildContext& ctx, std::vector<std::string> took, const ucx::EndpointInfo& lanes);

/// Records the path in `rep`: the leg's note gets "transport=... lanes: ...";
/// a path not as expected stops the row as a driver error (FAIL) with
/// path_failure()'s words.
void judge_path(RouteReport& rep, Leg& leg, const PathFacts& facts);

}  // namespace extmem::probe::t5
