// --measure: the GPU time of one Vulkan submission, from a timestamp query pair
// recorded around the commands being measured, with the labelled wall-clock
// fallback where the queue family has no timestamps. docs/probe.md, "T4 image
// rows" (--measure) and docs/probe-options.md, "Bandwidth, latency and memory types".
// The buffer copies of measure::gpu_leg and the image copies both time with it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "extmem/core/error.h"
#include "probe/worker/measure.h"
#include "vulkan/context.h"

namespace extmem::probe::measure {

/// A two-query VK_QUERY_TYPE_TIMESTAMP pool on one device, or the reason
/// there is none. Move-only; destroys the pool on destruction. The device
/// must outlive it.
class VkGpuClock {
 public:
  /// Creates the pool when the device's queue family has timestampValidBits > 0
  /// (0 means it writes no timestamps: Vulkan spec, VkQueueFamilyProperties).
  /// Never fails: without timestamps, or when vkCreateQueryPool declines,
  /// fallback() says why (with the VkResult name verbatim) and time() uses the
  /// wall clock.
  explicit VkGpuClock(const vk::Device& device);
  VkGpuClock(VkGpuClock&& o) noexcept;
  VkGpuClock& operator=(VkGpuClock&&) = delete;
  VkGpuClock(const VkGpuClock&) = delete;
  VkGpuClock& operator=(const VkGpuClock&) = delete;
  ~VkGpuClock();

  /// Whether time() reads GPU timestamps (clock clocks::vk_timestamp).
  bool timestamps() const noexcept { return pool_ != VK_NULL_HANDLE; }
  /// Why the wall clock is used ("queue family N has timestampValidBits=0",
  /// "vkCreateQueryPool(TIMESTAMP) -> VK_ERROR_..."); empty with timestamps.
  const std::string& fallback() const noexcept { return fallback_; }
  /// timestampValidBits of the device's queue family (bits), 0 when none.
  std::uint32_t valid_bits() const noexcept { return valid_bits_; }

  /// Records a timestamp at TOP_OF_PIPE, then what `record` records, then a
  /// timestamp at BOTTOM_OF_PIPE, in one command buffer; submits it and waits.
  /// Returns the seconds between the two timestamps (clock vk-timestamp), or
  /// with no pool the host's monotonic seconds from before the recording until
  /// the fence wait returned (clock wall: submission and wait latency
  /// included). Errors: vk_error of submit_and_wait's failing call, or
  /// vk_error("vkGetQueryPoolResults(TIMESTAMP)", result).
  Result<Timed> time(const std::function<void(VkCommandBuffer)>& record) const;

 private:
  const vk::Device* device_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  std::uint32_t valid_bits_ = 0;
  std::string fallback_;
};

}  // namespace extmem::probe::measure
