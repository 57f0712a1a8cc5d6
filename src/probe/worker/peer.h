// The conversation between a route's two halves over the peer socket (fd 3).
//
// The side that allocates sends a setup message (with the shared fd); then one
// side drives and the other serves requests on its own view of the memory:
// check a region against its pattern, write a region, read bytes, done.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "extmem/core/zerocopy.h"
#include "probe/worker/child_context.h"

namespace extmem::probe {

/// What the allocating side announces. On failure `facts` says why the route
/// cannot go on (unsupported or fatal) and no fd comes with it.
struct Setup {
  bool ok = false;
  RouteFacts facts;
  nlohmann::json info;  ///< route-specific fields (allocation size, memory type index, ...)
  os::UniqueFd fd;      ///< the shared fd, owned by the receiver
};

/// Sends a successful setup with `fd` (borrowed; -1 for none).
Status send_setup(const ChildContext& ctx, const nlohmann::json& info, int fd);
/// Sends a failed setup; the peer ends the route with these facts.
Status send_setup_failure(const ChildContext& ctx, const RouteFacts& facts);
/// Receives the setup. Errors: the channel's, protocol on a malformed message.
Result<Setup> recv_setup(const ChildContext& ctx);

/// The result of asking the peer to compare one region with its pattern.
struct PeerCheck {
  bool match = false;
  std::optional<std::size_t> mismatch_at;  ///< offset within the region
  std::optional<std::size_t> payload_at;   ///< offset within the peer's view where the pattern was found
};

/// Requests, driven side. Errors: the channel's; protocol on a malformed reply.
/// `seed` overrides the region writer's seed (a second writer of the same region).
Result<PeerCheck> peer_check(const ChildContext& ctx, Region region, std::optional<std::uint64_t> seed = {});
/// Asks the peer to write `region` with the pattern of `seed` (default: the region's own).
Status peer_write(const ChildContext& ctx, Region region, std::optional<std::uint64_t> seed = {});
/// Asks the peer how many 32-bit words of `region` differ from `seed`'s pattern (soak).
Result<std::size_t> peer_count_stale(const ChildContext& ctx, Region region, std::uint64_t seed);
/// Reads `out.size()` bytes at `offset` of the peer's view; returns bytes read.
Result<std::size_t> peer_read(const ChildContext& ctx, std::size_t offset, std::span<std::byte> out);
Status peer_done(const ChildContext& ctx);

/// Serves requests on `view` until "done" or the peer goes away. Returns the
/// error that ended it, if any (peer closing after "done" is not one).
Status serve(ChildContext& ctx, std::span<std::byte> view);

/// For a `view` that mirrors memory the CPU cannot map (CUDA device memory):
/// `refresh` fills the view from that memory before every request, `publish`
/// writes the view back after a "write". Either may be empty. An error from
/// either ends serving with that error.
struct ServeSync {
  std::function<Status()> refresh;
  std::function<Status()> publish;
};
/// serve() on a mirrored view (T1-cuda-vmm-fd's exporter).
Status serve(ChildContext& ctx, std::span<std::byte> view, const ServeSync& sync);

/// Local compare of one region of `view` with its pattern; on a mismatch,
/// scans the whole view for the payload (payload_at).
PeerCheck check_region(std::span<const std::byte> view, const Layout& layout, Region region,
                       std::optional<std::uint64_t> seed = {});

/// zerocopy::check_fn over the region window: writes through `local` (this
/// side's view of the whole allocation) and observes through the peer's view.
/// Returns the failure message, or nullopt when every probed byte crossed.
std::optional<std::string> alias_check(const ChildContext& ctx, std::span<std::byte> local);

}  // namespace extmem::probe
