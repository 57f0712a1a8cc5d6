// The whole-allocation sweep's compute form (probe/worker/sweep_shader.h) on the
// machine's Vulkan driver (lavapipe in CI): a gather reads exactly the word at
// every stamp's offset, a scatter writes exactly those words and no other byte,
// and a range larger than one storage binding is refused (the caller's cue to
// fall back to copy regions).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "probe/worker/sweep_shader.h"
#include "probe/worker/whole_alloc.h"
#include "vulkan/context.h"

namespace vk = extmem::vk;
namespace whole = extmem::probe::whole;
using extmem::probe::SweepShader;

namespace {

std::unique_ptr<vk::Device> open_device() {
  auto inst = vk::Instance::create();
  if (!inst) return nullptr;
  auto dev = vk::Device::create(*inst, 0, {});
  if (!dev) return nullptr;
  return std::move(*dev);
}

vk::Buffer host_buffer(const vk::Device& d, VkDeviceSize bytes) {
  vk::AllocationRequest req;
  req.size = bytes;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto b = d.create_buffer(req);
  EXPECT_TRUE(b) << b.error().message();
  return b ? std::move(*b) : vk::Buffer{};
}

std::uint64_t word_at(const std::byte* p, std::size_t offset) {
  std::uint64_t w = 0;
  std::memcpy(&w, p + offset, sizeof w);
  return w;
}

// 17 MiB: 4352 stamps, so the last work group is partly idle.
TEST(SweepShader, GathersAndScattersExactlyTheStampedWords) {
  auto dev = open_device();
  if (!dev) GTEST_SKIP() << "no Vulkan device";
  constexpr std::size_t kBytes = 17u << 20;
  const whole::Plan plan = whole::plan_for(kBytes);
  const std::size_t n = plan.count;
  const VkDeviceSize index_offset = (n * 8 + 255) / 256 * 256;
  vk::Buffer shared = host_buffer(*dev, kBytes);
  vk::Buffer priv = host_buffer(*dev, index_offset + n * 4);
  ASSERT_NE(shared.mapped, nullptr);
  ASSERT_NE(priv.mapped, nullptr);
  // Every 8-byte word of the shared buffer holds its own index (so a word read from the
  // wrong place is told apart); the private words start as a marker.
  for (std::size_t w = 0; w < kBytes / 8; ++w) {
    const std::uint64_t v = 0x5700000000000000ull | w;
    std::memcpy(shared.mapped + w * 8, &v, 8);
  }
  auto* index = reinterpret_cast<std::uint32_t*>(priv.mapped + index_offset);
  for (std::size_t i = 0; i < n; ++i) index[i] = static_cast<std::uint32_t>(plan.offset(i) / 8);
  std::memset(priv.mapped, 0xee, n * 8);
  auto made = SweepShader::create(*dev, {shared.buffer, plan.size, priv.buffer, 0, index_offset, static_cast<std::uint32_t>(n)});
  ASSERT_TRUE(made) << made.error().message();
  const SweepShader& shader = **made;

  ASSERT_TRUE(dev->submit_and_wait([&](VkCommandBuffer cmd) { shader.record(cmd, false); }));
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(word_at(priv.mapped, i * 8), word_at(shared.mapped, plan.offset(i))) << "stamp " << i;

  // Scatter stamps; every other byte of the shared buffer must keep its value.
  std::vector<std::byte> before(shared.mapped, shared.mapped + kBytes);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t s = whole::stamp(0x7363617474ull, plan.offset(i));
    std::memcpy(priv.mapped + i * 8, &s, 8);
  }
  ASSERT_TRUE(dev->submit_and_wait([&](VkCommandBuffer cmd) { shader.record(cmd, true); }));
  EXPECT_EQ(whole::first_missing(std::span<const std::byte>(shared.mapped, kBytes), plan, 0x7363617474ull), std::nullopt);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(before.data() + plan.offset(i), shared.mapped + plan.offset(i), 8);
  EXPECT_EQ(std::memcmp(before.data(), shared.mapped, kBytes), 0) << "a byte outside the stamps changed";
}

TEST(SweepShader, RefusesARangeBeyondOneStorageBinding) {
  auto dev = open_device();
  if (!dev) GTEST_SKIP() << "no Vulkan device";
  VkPhysicalDeviceProperties props{};
  dev->instance().fn().vkGetPhysicalDeviceProperties(dev->physical(), &props);
  vk::Buffer any = host_buffer(*dev, 4096);
  auto made = SweepShader::create(*dev, {any.buffer, VkDeviceSize{props.limits.maxStorageBufferRange} + 8, any.buffer, 0,
                                         256, 1});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().kind, extmem::ErrorKind::unsupported);
  EXPECT_NE(made.error().detail.find("maxStorageBufferRange"), std::string::npos) << made.error().message();
}

}  // namespace
