#include "probe/worker/gpu_access.h"

#include "probe/worker/sweep_shader.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/route_util.h"
#include "probe/worker/measure.h"

namespace extmem::probe {
namespace {
// Plans with at least this many stamps (16 MiB and up) move their words with the
// sweep shader: below it, building a pipeline costs more than the copy regions.
constexpr std::size_t kShaderStamps = 4096;
}  // namespace

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

std::optional<std::size_t> first_wrong(std::span<const std::uint64_t> words, const whole::Plan& plan,
                                       std::uint64_t seed) {
  for (std::size_t i = 0; i < plan.count; ++i)
    if (words[i] != whole::stamp(seed, plan.offset(i))) return plan.offset(i);
  return std::nullopt;
}

}  // namespace

void gpu_sweep(const std::function<void(const std::string&)>& step, const char* api, const whole::Plan& plan,
               const GpuWords& gpu, const whole::Far& far, Leg& leg, std::uint64_t salt) {
  if (!(leg.read_ok && leg.write_ok)) return;
  const std::size_t n = plan.count;
  if (n == 0) return;
  auto tell = [&](std::string what) {
    if (step) step(fmt::format("whole-allocation sweep through {}: {}", leg.name, what));
  };
  auto failed = [&](const Error& e, bool& flag) {
    fail_leg(leg, e);
    flag = false;
  };
  auto unaliased = [&](std::size_t at, bool& flag, const std::string& what) {
    flag = false;
    if (leg.failed_step.empty()) leg.failed_step = "whole-allocation sweep";
    leg.note += fmt::format("{}unaliasedAt={} ({})", leg.note.empty() ? "" : " ", at, what);
  };
  // Fixed seeds, distinct per direction ("gpu-read", "gpu-writ").
  const std::uint64_t read_seed = 0x6770752d72656164ull ^ salt, write_seed = 0x6770752d77726974ull ^ salt;
  std::vector<std::uint64_t> words(n), saved(n);

  // Read direction: the far side's stamps, gathered by the GPU.
  tell("the other side stamps every page");
  if (auto st = far.stamp(read_seed); !st) return failed(st.error(), leg.read_ok);
  tell(fmt::format("{} gathers {} words", api, n));
  const auto gathered = gpu.gather(words);
  const auto unstamped = far.unstamp();
  if (!gathered) return failed(gathered.error(), leg.read_ok);
  if (!unstamped) return failed(unstamped.error(), leg.read_ok);
  if (auto at = first_wrong(words, plan, read_seed))
    return unaliased(*at, leg.read_ok, fmt::format("the other side's write there was not seen by this {} GPU", api));

  // Write direction: save, scatter the stamps, the far side looks, restore.
  tell(fmt::format("{} saves {} words", api, n));
  if (auto st = gpu.gather(saved); !st) return failed(st.error(), leg.write_ok);
  for (std::size_t i = 0; i < n; ++i) words[i] = whole::stamp(write_seed, plan.offset(i));
  tell(fmt::format("{} writes {} words", api, n));
  if (auto st = gpu.scatter(words); !st) {
    (void)gpu.scatter(saved);  // best effort: some stamps may have landed
    return failed(st.error(), leg.write_ok);
  }
  tell("the other side looks for every word");
  const auto missing = far.first_missing(write_seed);
  tell(fmt::format("{} restores the words", api));
  const auto restored = gpu.scatter(saved);
  if (!missing) return failed(missing.error(), leg.write_ok);
  if (*missing) return unaliased(**missing, leg.write_ok, fmt::format("this {} GPU's write there was not seen by the other side", api));
  if (!restored) failed(restored.error(), leg.write_ok);
}

std::string whole_coverage_text(const std::string& leg, std::size_t size) {
  const whole::Plan plan = whole::plan_for(size);
  const std::string every =
      plan.stride_pages == 1 ? "every page" : fmt::format("every {}th page and the last", plan.stride_pages);
  return fmt::format("{} whole-allocation: {} of {} pages stamped ({}), both directions", leg, plan.count,
                     size / whole::kPage, every);
}

void gpu_whole(ChildContext& ctx, const vk::Device& device, VkBuffer shared, std::size_t size, const whole::Far& far,
               Leg& gpu) {
  if (!(gpu.read_ok && gpu.write_ok)) return;
  const whole::Plan plan = whole::plan_for(size);
  const std::size_t n = plan.count;
  if (n == 0) return;
  constexpr std::size_t kWord = sizeof(std::uint64_t);
  // Private buffer: [0, n) the words gathered from, or scattered to, the shared memory, then
  // (for the shader) one 32-bit word index per stamp, 256-aligned.
  const VkDeviceSize index_offset = (n * kWord + 255) / 256 * 256;
  ctx.step(fmt::format("whole-allocation sweep through {}: private buffer", gpu.name));
  vk::AllocationRequest req;
  req.size = index_offset + n * sizeof(std::uint32_t);
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto priv = device.create_buffer(req);
  if (!priv) {
    Error e = std::move(priv).error();
    e.step = "whole-allocation sweep: create private buffer: " + e.step;
    fail_leg(gpu, e);
    gpu.write_ok = false;
    return;
  }
  std::byte* mapped = priv->mapped;
  VkBuffer p = priv->buffer;
  // One dispatch per pass where the shared range fits a storage binding; else one copy region per stamp.
  std::unique_ptr<SweepShader> shader;
  std::vector<VkBufferCopy> gather, scatter;
  if (n >= kShaderStamps) {
    auto* index = reinterpret_cast<std::uint32_t*>(mapped + index_offset);
    for (std::size_t i = 0; i < n; ++i) index[i] = static_cast<std::uint32_t>(plan.offset(i) / kWord);
    auto made = SweepShader::create(device, {shared, plan.size, p, 0, index_offset, static_cast<std::uint32_t>(n)});
    if (made) shader = std::move(*made);
  }
  ctx.step(fmt::format("whole-allocation sweep through {}: {}", gpu.name,
                       shader ? "one dispatch a pass (sweep shader)" : "one copy region a stamp"));
  if (!shader) {
    gather.resize(n);
    scatter.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      gather[i] = {plan.offset(i), i * kWord, kWord};
      scatter[i] = {i * kWord, plan.offset(i), kWord};
    }
  }
  const vk::DeviceFns& f = device.fn();
  GpuWords words;
  words.gather = [&](std::span<std::uint64_t> out) -> Status {
    auto done = device.submit_and_wait([&](VkCommandBuffer cmd) {
      if (shader) return shader->record(cmd, false);
      host_to_transfer(f, cmd);
      f.vkCmdCopyBuffer(cmd, shared, p, static_cast<std::uint32_t>(n), gather.data());
      transfer_to(f, cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    });
    if (!done) return std::move(done).error();
    std::memcpy(out.data(), mapped, n * kWord);
    return {};
  };
  words.scatter = [&](std::span<const std::uint64_t> in) -> Status {
    std::memcpy(mapped, in.data(), n * kWord);
    auto done = device.submit_and_wait([&](VkCommandBuffer cmd) {
      if (shader) return shader->record(cmd, true);
      host_to_transfer(f, cmd);
      f.vkCmdCopyBuffer(cmd, p, shared, static_cast<std::uint32_t>(n), scatter.data());
      transfer_to(f, cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
    });
    if (!done) return std::move(done).error();
    return {};
  };
  gpu_sweep([&](const std::string& s) { ctx.step(s); }, "Vulkan", plan, words, far, gpu);
}

}  // namespace extmem::probe
