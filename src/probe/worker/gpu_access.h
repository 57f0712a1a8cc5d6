// The GPU access every tier row takes (docs/probe.md, "GPU access"): copy a
// region out of the shared buffer into a private one, write a region by a GPU
// transfer, wait, and make the writes visible to the host.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

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

/// A GPU's reach into the shared memory for the GPU form of the whole-allocation
/// sweep (docs/probe.md, "The whole allocation"). Both calls move the 8-byte
/// word at plan.offset(i) for every stamp i of the plan they were made for, by
/// GPU work (Vulkan transfers, GL buffer copies, CUDA copies) that has
/// completed on return, its writes visible to the host and the other process.
/// An error names the failing call (step) and the driver's code.
struct GpuWords {
  /// out[i] := the word at plan.offset(i) of the shared memory (out.size() == plan.count).
  std::function<Status(std::span<std::uint64_t> out)> gather;
  /// The word at plan.offset(i) of the shared memory := in[i] (in.size() == plan.count).
  std::function<Status(std::span<const std::uint64_t> in)> scatter;
};

/// The GPU form of the sweep over `plan`, shared by every GPU API, for a leg
/// that round-tripped its regions (does nothing otherwise, or for an empty plan):
/// read direction, the far side stamps every planned page, `gpu` gathers the
/// words, the far side puts its words back, and the words are compared with
/// the stamps; write direction, `gpu` gathers the words there (saved), scatters
/// its own stamps, the far side looks for every one, and `gpu` scatters the
/// saved words back. A page not shared clears leg.read_ok (read direction) or
/// leg.write_ok (write direction), sets failed_step "whole-allocation sweep"
/// and notes "unaliasedAt=<offset> (...)"; `api` names the GPU path in that
/// note ("GPU", "GL", "CUDA"). A GPU or far-side error is the leg's failing step
/// and code and clears the direction's flag. `step` is told each stage (the
/// worker's ctx.step; may be empty).
/// `salt` varies both directions' stamps: a second sweep of the same memory in
/// the same process (another leg) cannot pass on words a cache kept from the first.
void gpu_sweep(const std::function<void(const std::string&)>& step, const char* api, const whole::Plan& plan,
               const GpuWords& gpu, const whole::Far& far, Leg& leg, std::uint64_t salt = 0);

/// The detail line of a GPU leg whose sweep passed, e.g. "glgpu whole-allocation:
/// 256 of 256 pages stamped (every page), both directions" for `size` bytes.
std::string whole_coverage_text(const std::string& leg, std::size_t size);

/// The whole-allocation sweep through the Vulkan GPU: gpu_sweep with one
/// vkCmdCopyBuffer per call (one 8-byte VkBufferCopy region per stamp, through
/// a private host-visible buffer) on `shared`, which covers at least `size`
/// bytes of the shared memory; `far` is the other view of it (the peer,
/// peer_far(); or this process's CPU mapping, whole::LocalFar).
void gpu_whole(ChildContext& ctx, const vk::Device& device, VkBuffer shared, std::size_t size, const whole::Far& far,
               Leg& gpu);

}  // namespace extmem::probe
