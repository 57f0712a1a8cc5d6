// A device's timestamps on the host's CLOCK_MONOTONIC, so GPU times written by
// two processes (two VkDevices on one GPU) can be compared: each process
// calibrates its own device against the one clock they share
// (VK_EXT_calibrated_timestamps; docs/probe.md, "S1 --measure").
#pragma once

#include <cstdint>

#include "extmem/core/error.h"
#include "vulkan/context.h"

namespace extmem::vk {

/// One calibration: a device tick count and the CLOCK_MONOTONIC nanoseconds
/// read together by vkGetCalibratedTimestampsEXT. Plain value; borrows nothing.
class HostClock {
 public:
  /// Reads the pair now. Errors (ErrorKind::unsupported, the reason in detail):
  /// the device did not enable VK_EXT_calibrated_timestamps, its queue family
  /// has timestampValidBits 0, or the driver does not list both
  /// VK_TIME_DOMAIN_DEVICE_EXT and VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT as
  /// calibrateable; vk_error of vkGetPhysicalDeviceCalibrateableTimeDomainsEXT
  /// or vkGetCalibratedTimestampsEXT with its VkResult.
  static Result<HostClock> calibrate(const Device& device);

  /// CLOCK_MONOTONIC seconds of device timestamp `ticks` (a value written by
  /// vkCmdWriteTimestamp on this device): only the low timestampValidBits
  /// count, and the distance to the calibration point is taken the short way
  /// round the wrap, so a timestamp up to half the counter's range before or
  /// after the calibration converts right.
  double host_seconds(std::uint64_t ticks) const;

  /// The driver's bound on how far apart the two readings may be, nanoseconds
  /// (VkGetCalibratedTimestamps' pMaxDeviation).
  std::uint64_t max_deviation_ns() const { return max_deviation_ns_; }

 private:
  std::uint64_t device_ticks_ = 0;
  std::uint64_t host_ns_ = 0;
  std::uint64_t max_deviation_ns_ = 0;
  std::uint64_t mask_ = ~0ull;
  double period_ns_ = 1;
};

/// One device timestamp slot: a query pool of one TIMESTAMP query, written by
/// write() in a command buffer and read back by ticks(). Move-only; destroys its
/// pool; borrows `device`, which must outlive it.
class TimestampSlot {
 public:
  /// Errors: unsupported when timestampValidBits is 0; vk_error("vkCreateQueryPool(TIMESTAMP)").
  static Result<TimestampSlot> create(const Device& device);
  TimestampSlot(TimestampSlot&& o) noexcept;
  TimestampSlot& operator=(TimestampSlot&&) = delete;
  TimestampSlot(const TimestampSlot&) = delete;
  ~TimestampSlot();
  /// Records a reset of the query and a timestamp write at `stage` into `cmd`.
  void write(VkCommandBuffer cmd, VkPipelineStageFlagBits stage) const;
  /// The ticks written, once the command buffer has completed (the caller has
  /// waited for its fence). Errors: vk_error("vkGetQueryPoolResults(TIMESTAMP)"),
  /// VK_NOT_READY included.
  Result<std::uint64_t> ticks() const;

 private:
  TimestampSlot(const Device& d, VkQueryPool p) : device_(&d), pool_(p) {}
  const Device* device_;
  VkQueryPool pool_;
};

}  // namespace extmem::vk
