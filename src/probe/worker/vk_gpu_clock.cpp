#include "probe/worker/vk_gpu_clock.h"

#include <utility>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "vulkan/dispatch.h"

namespace extmem::probe::measure {

VkGpuClock::VkGpuClock(const vk::Device& device) : device_(&device), valid_bits_(device.timestamp_valid_bits()) {
  if (valid_bits_ == 0) {
    fallback_ = fmt::format("queue family {} has timestampValidBits=0", device.queue_family());
    return;
  }
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  if (VkResult r = device.fn().vkCreateQueryPool(device.handle(), &qi, nullptr, &pool_); r != VK_SUCCESS) {
    pool_ = VK_NULL_HANDLE;
    fallback_ = std::string("vkCreateQueryPool(TIMESTAMP) -> ") + vk::result_name(r);
  }
}

VkGpuClock::VkGpuClock(VkGpuClock&& o) noexcept
    : device_(o.device_), pool_(std::exchange(o.pool_, VK_NULL_HANDLE)), valid_bits_(o.valid_bits_),
      fallback_(std::move(o.fallback_)) {}

VkGpuClock::~VkGpuClock() {
  if (pool_ != VK_NULL_HANDLE) device_->fn().vkDestroyQueryPool(device_->handle(), pool_, nullptr);
}

Result<Timed> VkGpuClock::time(const std::function<void(VkCommandBuffer)>& record) const {
  const vk::DeviceFns& f = device_->fn();
  const double t0 = os::monotonic_seconds();
  auto s = device_->submit_and_wait([&](VkCommandBuffer cmd) {
    if (pool_ != VK_NULL_HANDLE) {
      f.vkCmdResetQueryPool(cmd, pool_, 0, 2);
      f.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
    }
    record(cmd);
    if (pool_ != VK_NULL_HANDLE) f.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
  });
  if (!s) return std::move(s).error();
  const double wall = os::monotonic_seconds() - t0;
  if (pool_ == VK_NULL_HANDLE) return Timed{wall, clocks::wall};
  std::uint64_t ticks[2] = {};
  VkResult r = f.vkGetQueryPoolResults(device_->handle(), pool_, 0, 2, sizeof ticks, ticks, sizeof ticks[0],
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS) return vk::vk_error("vkGetQueryPoolResults(TIMESTAMP)", r);
  // Only the low timestampValidBits bits count, and the counter may wrap between the two writes.
  const std::uint64_t mask = valid_bits_ >= 64 ? ~0ull : (1ull << valid_bits_) - 1;
  const std::uint64_t delta = ((ticks[1] & mask) - (ticks[0] & mask)) & mask;
  return Timed{static_cast<double>(delta) * device_->timestamp_period() * 1e-9, clocks::vk_timestamp};
}

}  // namespace extmem::probe::measure
