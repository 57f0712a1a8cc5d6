// Host-pointer import by backing (docs/probe.md, "Host-pointer import by backing"):
// drivers that import private anonymous memory can refuse MAP_SHARED memory of
// the same size, and the reverse. The memfd backing is the route's main leg; this
// adds anonymous private and a shared file in a tmpfs, each imported and
// round-tripped through the GPU in this process.
#pragma once

#include "probe/worker/child_context.h"
#include "probe/route_report.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// Fills legs `anon` ("hostanon") and `file` ("hostfile"): each backing of
/// layout.size bytes (rounded up to `alignment`) gets region A written by the
/// CPU, a host-pointer import, a GPU copy-out of A and a GPU write of E read
/// back by the CPU. A backing the driver refuses becomes an informational leg
/// and is listed in "refused backings: …" with its VkResult; an accepted one is
/// decisive, so the row is OK only if every accepted backing round-trips.
void probe_extra_backings(ChildContext& ctx, const vk::Device& device, std::size_t alignment, Leg& anon, Leg& file,
                          RouteReport& rep);

}  // namespace extmem::probe
