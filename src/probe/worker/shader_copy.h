// A buffer copy done by the GPU's shader cores (a compute dispatch of
// copy_words.comp), for --measure figures that show the memory's bandwidth.
// A transfer command (vkCmdCopyBuffer) may run on a copy engine whose rate is
// a fraction of the memory's: NVIDIA H200, 64 MiB device-local, 420 GB/s
// against 1950 GB/s for CUDA's cuMemcpyDtoD, which copies with the shader
// cores (docs/results/nvidia-h200-580.md). docs/probe.md, "--measure".
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "extmem/core/error.h"
#include "vulkan/compute_fns.h"
#include "vulkan/context.h"

namespace extmem::probe::measure {

class ShaderCopy {
 public:
  /// Most (source, destination) pairs one ShaderCopy binds (one descriptor set each).
  static constexpr std::uint32_t kMaxPairs = 8;

  /// Loads the compute entry points and builds the pipeline on `device`, which
  /// must outlive the ShaderCopy. Errors: load_compute_fns()'s;
  /// vk_error("vkCreateShaderModule(copy_words)" and the other create calls).
  static Result<std::unique_ptr<ShaderCopy>> create(const vk::Device& device);
  ~ShaderCopy();
  ShaderCopy(const ShaderCopy&) = delete;
  ShaderCopy& operator=(const ShaderCopy&) = delete;

  /// Largest copy, bytes: VkPhysicalDeviceLimits::maxStorageBufferRange rounded
  /// down to 16 (a descriptor binds at most that many bytes).
  VkDeviceSize max_bytes() const noexcept { return max_bytes_; }

  /// Records into `cmd` `copies` copies of the first `bytes` bytes of `src` into `dst`
  /// (both created with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, neither smaller than
  /// `bytes`), each copy a dispatch, a compute barrier between copies so they do
  /// not overlap; barriers before (earlier transfer and shader writes) and after
  /// (later transfer and shader access) too. `bytes` must be a non-zero multiple
  /// of 16 and at most max_bytes(). bind() returns the pair's descriptor set
  /// (owned by the ShaderCopy), written the first time the pair is seen: call
  /// it outside any recording, then record() with the set it gave.
  /// Errors: invalid_argument (size, or more than kMaxPairs pairs),
  /// vk_error("vkAllocateDescriptorSets(copy_words)").
  Result<VkDescriptorSet> bind(VkBuffer src, VkBuffer dst, VkDeviceSize bytes);
  void record(VkCommandBuffer cmd, VkDescriptorSet pair, VkDeviceSize bytes, unsigned copies) const;

 private:
  explicit ShaderCopy(const vk::Device& device) : device_(device) {}
  const vk::Device& device_;
  vk::ComputeFns fn_{};
  VkDeviceSize max_bytes_ = 0;
  VkShaderModule shader_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  struct Pair {
    VkBuffer src, dst;
    VkDeviceSize bytes;
    VkDescriptorSet set;
  };
  std::vector<Pair> pairs_;
};

}  // namespace extmem::probe::measure
