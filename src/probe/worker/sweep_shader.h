// The Vulkan GPU form of the whole-allocation sweep's word moves as one compute
// dispatch (sweep_words.comp) instead of one VkBufferCopy region per stamp: on
// NVIDIA 580 a copy command costs about a microsecond a region, a second a pass
// at 1 GiB (262144 stamps; docs/results/nvidia-h200-580.md, "Whole allocation at
// 1 GiB"). gpu_whole (gpu_access.h) uses it where the shared range fits one
// storage-buffer binding, and the copy command elsewhere.
#pragma once

#include <cstdint>
#include <memory>

#include "extmem/core/error.h"
#include "vulkan/compute_fns.h"
#include "vulkan/context.h"

namespace extmem::probe {

class SweepShader {
 public:
  /// Where the words are: `shared` holds the stamps' words in its first
  /// `shared_bytes`; `priv` holds `count` 8-byte words at `words_offset` (the
  /// gathered words, or the words to scatter) and `count` 32-bit word indices
  /// into `shared` (offset / 8) at `index_offset`. Both buffers were created
  /// with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT; both offsets are multiples of 256
  /// (the largest minStorageBufferOffsetAlignment the spec allows). `device`
  /// and the buffers must outlive the object.
  struct Binding {
    VkBuffer shared = VK_NULL_HANDLE;
    VkDeviceSize shared_bytes = 0;
    VkBuffer priv = VK_NULL_HANDLE;
    VkDeviceSize words_offset = 0;
    VkDeviceSize index_offset = 0;
    std::uint32_t count = 0;
  };
  /// Errors: unsupported when shared_bytes exceeds maxStorageBufferRange or
  /// the word indices would not fit 32 bits (the caller falls back to copies);
  /// load_compute_fns()'s; vk_error of the create and allocate calls.
  static Result<std::unique_ptr<SweepShader>> create(const vk::Device& device, const Binding& b);
  ~SweepShader();
  SweepShader(const SweepShader&) = delete;
  SweepShader& operator=(const SweepShader&) = delete;

  /// Records the dispatch (gather: private := shared words; scatter: the other
  /// way) between barriers that order it after earlier host and transfer writes
  /// and make its writes visible to the host and to later transfers.
  void record(VkCommandBuffer cmd, bool scatter) const;

 private:
  explicit SweepShader(const vk::Device& device) : device_(device) {}
  const vk::Device& device_;
  vk::ComputeFns fn_{};
  std::uint32_t count_ = 0;
  VkShaderModule shader_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
};

}  // namespace extmem::probe
