// vk::HostClock and vk::TimestampSlot on a real device (lavapipe in CI): a
// timestamp the GPU writes between two host readings converts to a
// CLOCK_MONOTONIC time between them, and the wrap arithmetic reads a
// timestamp from before the calibration as earlier, not 2^bits ticks later.
#include <gtest/gtest.h>

#include "extmem/os/clock.h"
#include "vulkan/context.h"
#include "vulkan/host_clock.h"

namespace vk = extmem::vk;

namespace {

std::unique_ptr<vk::Device> open_device() {
  auto inst = vk::Instance::create();
  if (!inst) return nullptr;
  auto dev = vk::Device::create(*inst, 0, {VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME});
  if (!dev) return nullptr;
  return std::move(*dev);
}

TEST(VkHostClock, GpuTimestampLandsBetweenTwoHostReadings) {
  auto dev = open_device();
  if (!dev) GTEST_SKIP() << "no Vulkan device";
  auto clock = vk::HostClock::calibrate(*dev);
  if (!clock) {
    ASSERT_EQ(clock.error().kind, extmem::ErrorKind::unsupported) << clock.error().message();
    GTEST_SKIP() << clock.error().message();
  }
  auto slot = vk::TimestampSlot::create(*dev);
  ASSERT_TRUE(slot) << slot.error().message();
  const double before = extmem::os::monotonic_seconds();
  ASSERT_TRUE(dev->submit_and_wait([&](VkCommandBuffer c) { slot->write(c, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT); }));
  const double after = extmem::os::monotonic_seconds();
  auto ticks = slot->ticks();
  ASSERT_TRUE(ticks) << ticks.error().message();
  // Calibrated after the write: the conversion runs backwards from the calibration point.
  auto later = vk::HostClock::calibrate(*dev);
  ASSERT_TRUE(later) << later.error().message();
  const double slack = 1e-9 * static_cast<double>(std::max(clock->max_deviation_ns(), later->max_deviation_ns())) + 1e-4;
  for (const vk::HostClock* c : {&*clock, &*later}) {
    const double t = c->host_seconds(*ticks);
    EXPECT_GE(t, before - slack);
    EXPECT_LE(t, after + slack);
  }
}

}  // namespace
