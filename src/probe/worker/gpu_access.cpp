#include "probe/worker/gpu_access.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/route_util.h"
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

namespace {

// Both barriers of a GPU round: the far side's CPU writes visible to the
// transfer before it, and the transfer's writes visible to the host after it.
void host_to_transfer(const vk::DeviceFns& f, VkCommandBuffer cmd) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_HOST_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  f.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, nullptr, 0,
                         nullptr);
}
void transfer_to(const vk::DeviceFns& f, VkCommandBuffer cmd, VkPipelineStageFlags stage, VkAccessFlags access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = access;
  f.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}

std::optional<std::size_t> first_wrong(std::span<const std::byte> words, const whole::Plan& plan, std::uint64_t seed) {
  for (std::size_t i = 0; i < plan.count; ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, words.data() + i * sizeof v, sizeof v);
    if (v != whole::stamp(seed, plan.offset(i))) return plan.offset(i);
  }
  return std::nullopt;
}

}  // namespace

void gpu_whole(ChildContext& ctx, const vk::Device& device, VkBuffer shared, std::size_t size, const whole::Far& far,
               Leg& gpu) {
  if (!(gpu.read_ok && gpu.write_ok)) return;
  const whole::Plan plan = whole::plan_for(size);
  const std::size_t n = plan.count;
  if (n == 0) return;
  constexpr std::size_t kWord = sizeof(std::uint64_t);
  // Private buffer: [0, n) words gathered from the shared memory, [n, 2n) the
  // words saved before the GPU writes, [2n, 3n) the stamps the GPU writes.
  ctx.step(fmt::format("whole-allocation sweep through {}: private buffer", gpu.name));
  vk::AllocationRequest req;
  req.size = 3 * n * kWord;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto priv = device.create_buffer(req);
  if (!priv) {
    Error e = std::move(priv).error();
    e.step = "whole-allocation sweep: create private buffer: " + e.step;
    fail_leg(gpu, e);
    gpu.write_ok = false;
    return;
  }
  std::span<std::byte> words(priv->mapped, 3 * n * kWord);
  std::vector<VkBufferCopy> gather(n), save(n), scatter(n);
  for (std::size_t i = 0; i < n; ++i) {
    gather[i] = {plan.offset(i), i * kWord, kWord};
    save[i] = {plan.offset(i), (n + i) * kWord, kWord};
    scatter[i] = {(2 * n + i) * kWord, plan.offset(i), kWord};
  }
  const vk::DeviceFns& f = device.fn();
  VkBuffer p = priv->buffer;
  auto failed = [&](const Error& e, bool& flag) {
    fail_leg(gpu, e);
    flag = false;
  };

  // Read direction: the far side's stamps, gathered by the GPU.
  const std::uint64_t read_seed = 0x6770752d72656164ull, write_seed = 0x6770752d77726974ull;
  ctx.step(fmt::format("whole-allocation sweep through {}: the other side stamps every page", gpu.name));
  if (auto st = far.stamp(read_seed); !st) return failed(st.error(), gpu.read_ok);
  ctx.step(fmt::format("whole-allocation sweep through {}: GPU gathers {} words", gpu.name, n));
  auto gathered = device.submit_and_wait([&](VkCommandBuffer cmd) {
    host_to_transfer(f, cmd);
    f.vkCmdCopyBuffer(cmd, shared, p, static_cast<std::uint32_t>(n), gather.data());
    transfer_to(f, cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  });
  const auto unstamped = far.unstamp();
  if (!gathered) return failed(gathered.error(), gpu.read_ok);
  if (!unstamped) return failed(unstamped.error(), gpu.read_ok);
  if (auto at = first_wrong(words.subspan(0, n * kWord), plan, read_seed)) {
    gpu.read_ok = false;
    gpu.failed_step = "whole-allocation sweep";
    gpu.note += fmt::format("{}unaliasedAt={} (the other side's write there was not seen by this GPU)",
                            gpu.note.empty() ? "" : " ", *at);
    return;
  }

  // Write direction: save, scatter the stamps, the far side looks, restore.
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = whole::stamp(write_seed, plan.offset(i));
    std::memcpy(words.data() + (2 * n + i) * kWord, &v, kWord);
  }
  ctx.step(fmt::format("whole-allocation sweep through {}: GPU writes {} words", gpu.name, n));
  auto scattered = device.submit_and_wait([&](VkCommandBuffer cmd) {
    host_to_transfer(f, cmd);
    f.vkCmdCopyBuffer(cmd, shared, p, static_cast<std::uint32_t>(n), save.data());
    // The save must read the words before the scatter overwrites them.
    transfer_to(f, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    f.vkCmdCopyBuffer(cmd, p, shared, static_cast<std::uint32_t>(n), scatter.data());
    transfer_to(f, cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
  });
  if (!scattered) return failed(scattered.error(), gpu.write_ok);
  ctx.step(fmt::format("whole-allocation sweep through {}: the other side looks for every word", gpu.name));
  auto missing = far.first_missing(write_seed);
  ctx.step(fmt::format("whole-allocation sweep through {}: GPU restores the words", gpu.name));
  auto restored = device.submit_and_wait([&](VkCommandBuffer cmd) {
    for (auto& c : save) std::swap(c.srcOffset, c.dstOffset);
    host_to_transfer(f, cmd);
    f.vkCmdCopyBuffer(cmd, p, shared, static_cast<std::uint32_t>(n), save.data());
    transfer_to(f, cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
  });
  if (!missing) return failed(missing.error(), gpu.write_ok);
  if (*missing) {
    gpu.write_ok = false;
    gpu.failed_step = "whole-allocation sweep";
    gpu.note += fmt::format("{}unaliasedAt={} (this GPU's write there was not seen by the other side)",
                            gpu.note.empty() ? "" : " ", **missing);
    return;
  }
  if (!restored) failed(restored.error(), gpu.write_ok);
}

}  // namespace extmem::probe
