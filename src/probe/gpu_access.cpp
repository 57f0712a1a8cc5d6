#include "probe/gpu_access.h"

#include <fmt/format.h>

#include "extmem/core/pattern.h"

namespace extmem::probe {

void gpu_access(const vk::Device& device, VkBuffer shared, const Layout& layout, Region read_region, Leg& gpu) {
  gpu.attempted = true;
  // Private host-visible buffer: [0, 4K) receives the copy-out, [4K, 8K) holds pattern E for the GPU write.
  vk::AllocationRequest req;
  req.size = 2 * kRegionSize;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto staging = device.create_buffer(req);
  if (!staging) {
    gpu.failed_step = "create private buffer: " + staging.error().step;
    gpu.code = staging.error().code;
    return;
  }
  std::span<std::byte> priv(staging->mapped, 2 * kRegionSize);
  std::fill(priv.begin(), priv.begin() + kRegionSize, std::byte{0});
  pattern::fill(priv.subspan(kRegionSize, kRegionSize), seed_of(Region::E));

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
    VkBufferCopy in{kRegionSize, layout.offset(Region::E), kRegionSize};
    f.vkCmdCopyBuffer(cmd, priv_buffer, shared, 1, &in);
    VkMemoryBarrier transfer_to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    transfer_to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    transfer_to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    f.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &transfer_to_host,
                           0, nullptr, 0, nullptr);
  });
  if (!recorded) {
    gpu.failed_step = recorded.error().step;
    gpu.code = recorded.error().code;
    return;
  }
  auto bad = pattern::first_mismatch(priv.subspan(0, kRegionSize), seed_of(read_region));
  gpu.read_ok = !bad;
  if (bad) gpu.note = fmt::format("gpuMismatchAt={} (copy-out of region {})", *bad, region_name(read_region));
}

}  // namespace extmem::probe
