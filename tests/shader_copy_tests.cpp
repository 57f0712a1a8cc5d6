// --measure's shader copy (probe/worker/shader_copy.h) on the machine's Vulkan
// driver (lavapipe in CI): the dispatch copies exactly the bytes asked, all of
// them, repeated copies included, and refuses sizes it cannot bind.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "probe/worker/shader_copy.h"
#include "vulkan/context.h"

namespace vk = extmem::vk;
using extmem::probe::measure::ShaderCopy;

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

// The probe's default size plus a page, so the last work group is partly idle; the destination
// is longer than the copy, and its tail must stay untouched.
TEST(ShaderCopy, CopiesEveryWordAndNothingMore) {
  auto dev = open_device();
  if (!dev) GTEST_SKIP() << "no Vulkan device";
  auto copy = ShaderCopy::create(*dev);
  ASSERT_TRUE(copy) << copy.error().message();
  const VkDeviceSize bytes = (64ull << 20) + 4096;
  if (bytes > (*copy)->max_bytes()) GTEST_SKIP() << "maxStorageBufferRange " << (*copy)->max_bytes();
  vk::Buffer src = host_buffer(*dev, bytes), dst = host_buffer(*dev, bytes + 64);
  ASSERT_NE(src.mapped, nullptr);
  ASSERT_NE(dst.mapped, nullptr);
  auto* s = reinterpret_cast<std::uint32_t*>(src.mapped);
  for (VkDeviceSize i = 0; i < bytes / 4; ++i) s[i] = static_cast<std::uint32_t>(i * 2654435761u) ^ 0x5a5a5a5au;
  std::memset(dst.mapped, 0xee, bytes + 64);
  auto set = (*copy)->bind(src.buffer, dst.buffer, bytes);
  ASSERT_TRUE(set) << set.error().message();
  // Three 64 MiB copies on a CPU device under the sanitizers: the default 10 s fence bound
  // was reached on a busy 2-core machine, so this one only guards against a hang.
  const extmem::Status done =
      dev->submit_and_wait([&](VkCommandBuffer cmd) { (*copy)->record(cmd, *set, bytes, 3); }, 240'000'000'000ull);
  ASSERT_TRUE(done) << done.error().message();
  EXPECT_EQ(std::memcmp(src.mapped, dst.mapped, bytes), 0);
  for (VkDeviceSize i = bytes; i < bytes + 64; ++i)
    ASSERT_EQ(static_cast<unsigned>(dst.mapped[i]), 0xeeu) << "byte " << i << " beyond the copy was written";
}

TEST(ShaderCopy, RefusesWhatItCannotBind) {
  auto dev = open_device();
  if (!dev) GTEST_SKIP() << "no Vulkan device";
  auto copy = ShaderCopy::create(*dev);
  ASSERT_TRUE(copy) << copy.error().message();
  vk::Buffer a = host_buffer(*dev, 4096), b = host_buffer(*dev, 4096);
  for (VkDeviceSize bad : {VkDeviceSize{0}, VkDeviceSize{4095}, (*copy)->max_bytes() + 16}) {
    auto set = (*copy)->bind(a.buffer, b.buffer, bad);
    ASSERT_FALSE(set) << bad;
    EXPECT_EQ(set.error().kind, extmem::ErrorKind::invalid_argument);
    EXPECT_NE(set.error().detail.find("accepted: a non-zero multiple of 16"), std::string::npos) << set.error().message();
  }
  // The same pair binds once; further sizes are further pairs, up to kMaxPairs.
  auto first = (*copy)->bind(a.buffer, b.buffer, 4096);
  ASSERT_TRUE(first);
  auto again = (*copy)->bind(a.buffer, b.buffer, 4096);
  ASSERT_TRUE(again);
  EXPECT_EQ(*first, *again);
  for (std::uint32_t i = 1; i < ShaderCopy::kMaxPairs; ++i) ASSERT_TRUE((*copy)->bind(a.buffer, b.buffer, 16 * i));
  auto over = (*copy)->bind(a.buffer, b.buffer, 4080);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().detail.find("more than 8 buffer pairs"), std::string::npos) << over.error().message();
}

}  // namespace
