// The GPU access every tier row takes (docs/probe.md, "GPU access"): copy a
// region out of the shared buffer into a private one, write a region by a GPU
// transfer, wait, and make the writes visible to the host.
#pragma once

#include <cstdint>
#include <optional>

#include "extmem/core/verdict.h"
#include "probe/layout.h"
#include "probe/worker/child_context.h"
#include "probe/worker/whole_alloc.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// One Vulkan GPU round on `shared` (a buffer over the shared memory, at least
/// layout.size bytes): copies `read_region` out into a private buffer, copies
/// the pattern of `write_seed` into `write_region`, barriers HOST_WRITE ->
/// TRANSFER and TRANSFER_WRITE -> HOST_READ, waits on a fence. Returns the
/// number of 32-bit words of the copy-out that differ from `read_seed`'s
/// pattern. Errors: the failing Vulkan call's vk_error.
Result<std::size_t> gpu_round(const vk::Device& device, VkBuffer shared, const Layout& layout, Region read_region,
                              std::uint64_t read_seed, Region write_region, std::uint64_t write_seed);

/// Records a GPU round's outcome on `gpu`: attempted; read_ok when no copied-out
/// word was stale; otherwise the failing call (failed_step/code) or the stale count
/// in the note. `api` names the path in the note ("GPU", "GL").
void record_gpu_round(const Result<std::size_t>& stale, const char* api, Region read_region, Leg& gpu);

/// The row's GPU leg: gpu_round reading `read_region` (its writer's pattern)
/// and writing region E. Sets gpu.attempted, gpu.read_ok (copy-out matched),
/// or gpu.failed_step/code. The other process confirms E and sets gpu.write_ok.
void gpu_access(const vk::Device& device, VkBuffer shared, const Layout& layout, Region read_region, Leg& gpu);

/// The whole-allocation sweep through the GPU (docs/probe.md, "The whole
/// allocation") for a GPU leg that round-tripped its regions; `shared` covers at
/// least `size` bytes of the shared memory, `far` is the other view of it (the
/// peer, peer_far(); or this process's CPU mapping, whole::LocalFar).
/// Read direction: the far side writes a stamp per page, the GPU copies the word
/// of every stamp into a private buffer (one vkCmdCopyBuffer, one 8-byte region
/// per stamp) and the words are compared. Write direction: the GPU saves the
/// words, copies stamps over them, the far side looks for every one, and the GPU
/// copies the saved words back. A page not shared clears gpu.read_ok or
/// gpu.write_ok (the direction that lost it) and notes "unaliasedAt=<offset>";
/// a Vulkan or far-side error is recorded as the leg's failing step and code.
/// Does nothing unless the leg round-tripped.
void gpu_whole(ChildContext& ctx, const vk::Device& device, VkBuffer shared, std::size_t size, const whole::Far& far,
               Leg& gpu);

}  // namespace extmem::probe
