#include "probe/worker/gpu_access.h"

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/measure.h"

namespace extmem::probe {

Result<std::size_t> gpu_round(const vk::Device& device, VkBuffer shared, const Layout& layout, Region read_region,
                              std::uint64_t read_seed, Region write_region, std::uint64_t write_seed) {
  // Private host-visible buffer: [0, 4K) receives the copy-out, [4K, 8K) holds the pattern for the GPU write.
  vk::AllocationRequest req;
  req.size = 2 * kRegionSize;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto staging = device.create_buffer(req);
  if (!staging) {
    Error e = std::move(staging).error();
    e.step = "create private buffer: " + e.step;
    return e;
  }
  std::span<std::byte> priv(staging->mapped, 2 * kRegionSize);
  std::fill(priv.begin(), priv.begin() + kRegionSize, std::byte{0});
  pattern::fill(priv.subspan(kRegionSize, kRegionSize), write_seed);

  const vk::DeviceFns& f = device.fn();
  VkBuffer priv_buffer = staging->buffer;
  auto recorded = device.submit_and_wait([&](VkCommandBuffer cmd) {
    // The other side's CPU writes must be visible to the transfer that reads them.
    VkMemoryBarrier host_to_transfer{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    host_to_transfer.srcAccessMask = VK_ACCESS_HOST_WRITE_BIT;
    host_to_transfer.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    f.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &host_to_transfer,
                           0, nullptr, 0, nullptr);
    VkBufferCopy out{layout.offset(read_region), 0, kRegionSize};
    f.vkCmdCopyBuffer(cmd, shared, priv_buffer, 1, &out);
    VkBufferCopy in{kRegionSize, layout.offset(write_region), kRegionSize};
    f.vkCmdCopyBuffer(cmd, priv_buffer, shared, 1, &in);
    VkMemoryBarrier transfer_to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    transfer_to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    transfer_to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    f.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &transfer_to_host,
                           0, nullptr, 0, nullptr);
  });
  if (!recorded) return std::move(recorded).error();
  return pattern::count_stale_words(priv.subspan(0, kRegionSize), read_seed);
}

void record_gpu_round(const Result<std::size_t>& stale, const char* api, Region read_region, Leg& gpu) {
  gpu.attempted = true;
  if (!stale) {
    gpu.failed_step = stale.error().step;
    gpu.code = stale.error().code;
    return;
  }
  gpu.read_ok = *stale == 0;
  if (*stale != 0)
    gpu.note = fmt::format("{} copy-out of region {} has {} stale words of 1024", api, region_name(read_region), *stale);
}

void gpu_access(const vk::Device& device, VkBuffer shared, const Layout& layout, Region read_region, Leg& gpu) {
  record_gpu_round(gpu_round(device, shared, layout, read_region, seed_of(read_region), Region::E, seed_of(Region::E)),
                   "GPU", read_region, gpu);
  if (gpu.read_ok) measure::gpu_leg(gpu.name, device, shared, layout.size);
}

}  // namespace extmem::probe
