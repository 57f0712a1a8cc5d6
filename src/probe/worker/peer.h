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
#include "probe/worker/setup_info.h"
#include "probe/worker/whole_alloc.h"

namespace extmem::probe {

/// What the allocating side announces. On failure `facts` says why the route
/// cannot go on (unsupported or fatal) and no fd comes with it.
struct Setup {
  bool ok = false;
  RouteFacts facts;
  peer::SetupInfo info;  ///< the allocation and the route's own facts
  os::UniqueFd fd;      ///< the shared fd, owned by the receiver
};

/// Sends a successful setup with `fd` (borrowed; -1 for none).
Status send_setup(const ChildContext& ctx, const peer::SetupInfo& info, int fd);
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

/// Whole-allocation sweep requests (whole_alloc.h), driven side; `size` is the
/// allocation's bytes (both sides derive the same whole::plan_for(size)).
/// Asks the peer to write the stamps of `seed` into its view (it keeps the words
/// it overwrote on the first such request until peer_unstamp).
Status peer_stamp(const ChildContext& ctx, std::size_t size, std::uint64_t seed);
/// Asks the peer to put back the words its first peer_stamp overwrote.
Status peer_unstamp(const ChildContext& ctx);
/// Asks the peer to write `length` bytes of `seed`'s pattern at `offset` of its
/// view (and publish it, for a mirrored view). Errors: the channel's; protocol
/// when the peer refuses a range outside its view.
Status peer_fill(const ChildContext& ctx, std::size_t offset, std::size_t length, std::uint64_t seed);
/// Asks the peer for the offset of the first stamp of `seed` its view does not
/// hold (nullopt: it holds every one).
Result<std::optional<std::size_t>> peer_first_missing(const ChildContext& ctx, std::size_t size, std::uint64_t seed);
/// The peer as a sweep's far side.
whole::Far peer_far(const ChildContext& ctx, std::size_t size);

/// One request to the serving peer and its reply (a JSON object), with the fd
/// that came with the reply in `*fd` when `fd` is set. Errors: the channel's; a
/// reply that is not an object, or carries "error" (protocol, with the text).
Result<nlohmann::json> peer_request(const ChildContext& ctx, const nlohmann::json& req, os::UniqueFd* fd = nullptr);

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
  /// A route's own requests (T1-cuda-ipc's ordering proof, T1-cuda-vmm-multichunk's
  /// boundary fills): called, after refresh, with the op and the request for
  /// every op serve() does not know; returns the reply to send, or nullopt when
  /// the op is unknown to it too (answered with an "unknown op" error). An
  /// error ends serving. An fd the op leaves in `fd_out`
  /// goes with the reply (the reply's frame owns a dup; serve() closes this one).
  std::function<std::optional<Result<nlohmann::json>>(const std::string& op, const nlohmann::json& req,
                                                      os::UniqueFd& fd_out)>
      extra;
};
/// serve() on a mirrored view (T1-cuda-vmm-fd's exporter).
Status serve(ChildContext& ctx, std::span<std::byte> view, const ServeSync& sync);

/// Local compare of one region of `view` with its pattern; on a mismatch,
/// scans the whole view for the payload (payload_at).
PeerCheck check_region(std::span<const std::byte> view, const Layout& layout, Region region,
                       std::optional<std::uint64_t> seed = {});

/// Whether `local` (this side's view of the whole allocation, layout.size bytes
/// or more) and the peer's view are the same memory over the whole allocation
/// (docs/probe.md, "The whole allocation"): zerocopy::check_fn handed the full
/// layout.size bytes (writes through `local`, observes through the peer's view),
/// then whole::sweep with the peer as the far side (a stamp per page, both
/// directions). Returns the failure message, or nullopt when everything crossed;
/// a page not shared is named as "unaliasedAt=<offset>" (bytes from the
/// allocation's start). A peer error is a failure too, with its step and code.
std::optional<std::string> alias_check(const ChildContext& ctx, std::span<std::byte> local);

/// alias_check for two views in this process (a same-process import against the
/// exporter's own mapping): zerocopy::check over the first `size` bytes, then
/// whole::sweep with `far` as the far side. Both views must hold `size` bytes.
std::optional<std::string> local_alias_check(std::span<std::byte> near, std::span<std::byte> far, std::size_t size);

}  // namespace extmem::probe
