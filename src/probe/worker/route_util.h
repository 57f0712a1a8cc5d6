// Small helpers the route halves share.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "extmem/core/verdict.h"
#include "probe/worker/child_context.h"
#include "probe/worker/peer.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// Records `error` as the leg's failing step and code.
void fail_leg(Leg& leg, const Error& error);

/// "step -> CODE (detail)" for a why: text.
std::string why_of(const Error& error);

/// The selected Vulkan device with `wanted` extensions enabled where present (steps
/// "create Vulkan instance" and "create Vulkan device" reported, also when the
/// process kept it from an earlier route: drivers::vulkan_device()). Shared: the
/// caller must release every object it made on it before the route ends.
Result<std::shared_ptr<vk::Device>> open_device(ChildContext& ctx, const std::vector<std::string>& wanted);

/// Compares `region` of a local view with its pattern: sets leg.attempted and
/// leg.read_ok, and on a mismatch notes where the payload was found.
void read_local(std::span<const std::byte> view, const Layout& layout, Region region, Leg& leg);

/// Asks the peer to compare `region` with its pattern; on a match sets leg.write_ok
/// (the leg's writes reached the peer), else notes where the peer saw the payload.
void confirm_remote(ChildContext& ctx, Region region, Leg& leg, std::optional<std::uint64_t> seed = {});

/// Asks the peer to check `region` and sets leg.read_ok from it (the peer saw the allocating side's bytes).
void read_remote(ChildContext& ctx, Region region, Leg& leg);

/// Runs alias_check for a leg that round-tripped: the zerocopy check over the
/// whole allocation and the per-page sweep in both directions (docs/probe.md,
/// "The whole allocation"). A failure clears write_ok, sets the failing step
/// "zerocopy alias check" and puts the message, with "unaliasedAt=<offset>"
/// where a page is not shared, in the leg's note.
void alias_leg(ChildContext& ctx, std::span<std::byte> local, Leg& leg);

/// The negative control of the whole-allocation check (test-only, fault action
/// `partialalias`): a private anonymous mapping of `shared.size()` bytes holding
/// a copy of `shared`, whose first `aliased` bytes (rounded down to the page
/// size) are then replaced, by mremap(old_size = 0), with a second mapping of
/// `shared`'s own pages. The result aliases `shared` below `aliased` and is a
/// private copy from there on. `shared` must be a MAP_SHARED mapping and outlive
/// nothing (the pages stay referenced by the new mapping). Errors:
/// os_error("mmap"), os_error("mremap(old_size = 0)").
Result<os::Mapping> partial_alias_copy(const os::Mapping& shared, std::size_t aliased);

/// Whether `type` is advertised importable/exportable for the route buffer usage.
bool advertised(const vk::Device& device, VkExternalMemoryHandleTypeFlagBits type, VkExternalMemoryFeatureFlagBits feature);

/// Text of a failure at an export/import site, and whether it makes the row UNSUPPORTED
/// (never advertised) rather than FAIL (advertised and declined). docs/probe.md, "UNSUPPORTED or FAIL".
struct SiteFailure {
  bool unsupported = false;
  std::string why;
  /// The kind of error this failure is: unsupported, or driver (advertised and declined).
  ErrorKind kind() const noexcept { return unsupported ? ErrorKind::unsupported : ErrorKind::driver; }
};
SiteFailure classify_site(const Error& error, bool was_advertised, const std::string& handle_type);

}  // namespace extmem::probe

namespace extmem::probe {

/// The passive allocating half of the memfd routes: creates a memfd of
/// layout.size bytes, writes region A, sends the fd, then serves the peer.
int memfd_owner_serve(ChildContext& ctx);

/// An unlinked file of `bytes` bytes in a tmpfs (/dev/shm, else $TMPDIR, else /tmp),
/// named `prefix`-XXXXXX while it exists: shmem pages like a memfd's, reached through a
/// path. The caller owns the fd. `where` gets the directory and whether it is a tmpfs
/// (statfs TMPFS_MAGIC). Errors: os_error("mkostemp PATH") / ("ftruncate PATH"), or
/// unsupported "open a tmpfs file" when no directory is writable.
Result<os::UniqueFd> tmpfs_file(std::size_t bytes, const std::string& prefix, std::string& where);

}  // namespace extmem::probe

#include "probe/worker/soak.h"

namespace extmem::probe {

/// With --soak, and only when every decisive leg of rep.legs round-tripped,
/// runs the soak and puts its counts in rep.facts.soak (docs/probe.md, "Coherency over time": only OK routes soak).
void maybe_soak(ChildContext& ctx, RouteReport& rep, const SoakPlan& plan, const OtherSide& other);

/// The passive receiving half: takes the setup, maps its fd MAP_SHARED and
/// serves the peer. A failed setup ends it quietly (the driver reports).
int receive_and_serve(ChildContext& ctx);

/// Sets leg.write_ok from a local compare of `region` (the peer wrote it through its mapping).
void confirm_local(std::span<const std::byte> view, const Layout& layout, Region region, Leg& leg,
                   std::optional<std::uint64_t> seed = {});

}  // namespace extmem::probe
