#include "vulkan/host_clock.h"


#include <utility>
#include <vector>

#include <fmt/format.h>

namespace extmem::vk {

Result<HostClock> HostClock::calibrate(const Device& device) {
  if (!device.has(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) || device.fn().vkGetCalibratedTimestampsEXT == nullptr)
    return Error{"calibrate GPU timestamps", ErrorKind::unsupported, {},
                 "VK_EXT_calibrated_timestamps is not exposed by the device"};
  if (device.timestamp_valid_bits() == 0)
    return Error{"calibrate GPU timestamps", ErrorKind::unsupported, {},
                 fmt::format("queue family {} has timestampValidBits=0", device.queue_family())};
  auto domains_fn = device.instance().fn().vkGetPhysicalDeviceCalibrateableTimeDomainsEXT;
  if (domains_fn == nullptr)
    return Error{"calibrate GPU timestamps", ErrorKind::unsupported, {},
                 "the loader returned no vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"};
  std::uint32_t n = 0;
  if (VkResult r = domains_fn(device.physical(), &n, nullptr); r != VK_SUCCESS)
    return vk_error("vkGetPhysicalDeviceCalibrateableTimeDomainsEXT", r);
  std::vector<VkTimeDomainEXT> domains(n);
  if (VkResult r = domains_fn(device.physical(), &n, domains.data()); r != VK_SUCCESS && r != VK_INCOMPLETE)
    return vk_error("vkGetPhysicalDeviceCalibrateableTimeDomainsEXT", r);
  bool gpu = false, mono = false;
  for (std::uint32_t i = 0; i < n; ++i) {
    gpu = gpu || domains[i] == VK_TIME_DOMAIN_DEVICE_EXT;
    mono = mono || domains[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
  }
  if (!gpu || !mono)
    return Error{"calibrate GPU timestamps", ErrorKind::unsupported, {},
                 fmt::format("calibrateable time domains lack {}", !gpu ? "DEVICE" : "CLOCK_MONOTONIC")};
  VkCalibratedTimestampInfoEXT info[2] = {{VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT},
                                          {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT}};
  info[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
  info[1].timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
  std::uint64_t ts[2] = {};
  HostClock c;
  if (VkResult r = device.fn().vkGetCalibratedTimestampsEXT(device.handle(), 2, info, ts, &c.max_deviation_ns_);
      r != VK_SUCCESS)
    return vk_error("vkGetCalibratedTimestampsEXT(DEVICE, CLOCK_MONOTONIC)", r);
  const std::uint32_t bits = device.timestamp_valid_bits();
  c.mask_ = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  c.device_ticks_ = ts[0] & c.mask_;
  c.host_ns_ = ts[1];
  c.period_ns_ = device.timestamp_period();
  return c;
}

double HostClock::host_seconds(std::uint64_t ticks) const {
  std::uint64_t ahead = ((ticks & mask_) - device_ticks_) & mask_;
  double delta = static_cast<double>(ahead);
  // More than half the range ahead is read as behind: the timestamp was written before the calibration.
  if (ahead > mask_ / 2) delta = -static_cast<double>((device_ticks_ - (ticks & mask_)) & mask_);
  return (static_cast<double>(host_ns_) + delta * period_ns_) * 1e-9;
}

Result<TimestampSlot> TimestampSlot::create(const Device& device) {
  if (device.timestamp_valid_bits() == 0)
    return Error{"vkCreateQueryPool(TIMESTAMP)", ErrorKind::unsupported, {},
                 fmt::format("queue family {} has timestampValidBits=0", device.queue_family())};
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 1;
  VkQueryPool pool = VK_NULL_HANDLE;
  if (VkResult r = device.fn().vkCreateQueryPool(device.handle(), &qi, nullptr, &pool); r != VK_SUCCESS)
    return vk_error("vkCreateQueryPool(TIMESTAMP)", r);
  return TimestampSlot(device, pool);
}

TimestampSlot::TimestampSlot(TimestampSlot&& o) noexcept
    : device_(o.device_), pool_(std::exchange(o.pool_, VK_NULL_HANDLE)) {}

TimestampSlot::~TimestampSlot() {
  if (pool_ != VK_NULL_HANDLE) device_->fn().vkDestroyQueryPool(device_->handle(), pool_, nullptr);
}

void TimestampSlot::write(VkCommandBuffer cmd, VkPipelineStageFlagBits stage) const {
  device_->fn().vkCmdResetQueryPool(cmd, pool_, 0, 1);
  device_->fn().vkCmdWriteTimestamp(cmd, stage, pool_, 0);
}

Result<std::uint64_t> TimestampSlot::ticks() const {
  std::uint64_t t = 0;
  VkResult r = device_->fn().vkGetQueryPoolResults(device_->handle(), pool_, 0, 1, sizeof t, &t, sizeof t,
                                                   VK_QUERY_RESULT_64_BIT);
  if (r != VK_SUCCESS) return vk_error("vkGetQueryPoolResults(TIMESTAMP)", r);
  return t;
}

}  // namespace extmem::vk
