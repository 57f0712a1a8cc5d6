// The GPU use in the reclaim binding: a compute dispatch (paint_band.comp)
// whose descriptor sets come from a BindingMemo, with retired sets freed only
// after the submissions that may use them have retired.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "extmem/reclaim/binding_memo.h"
#include "reclaim/vk_tracker.h"

namespace extmem::reclaim::vkr {

/// A descriptor set and the pool it came from.
struct SetRef {
  VkDescriptorSet set = VK_NULL_HANDLE;
  std::uint32_t pool = 0;
};

class Painter {
 public:
  /// Builds the shader module, set layout, pipeline layout and pipeline. `output`
  /// is the buffer every dispatch writes. Errors: the failing vkCreate* call.
  static Result<std::unique_ptr<Painter>> create(const vk::Device& device, const Fns& fns, QueueTracker& tracker,
                                                 MemoKeying keying, VkBuffer output, VkDeviceSize output_bytes);
  ~Painter();  // the device must be idle

  /// Records one dispatch into the tracker's open recording: store `store`
  /// (memo handle `handle`, `range` bytes) -> output words [first, first + count).
  /// `epoch` is the list's destroy epoch now. Errors: the failing Vulkan call.
  Status record(VkBuffer store, std::uint64_t handle, VkDeviceSize range, std::uint64_t epoch, std::uint32_t first,
                std::uint32_t count);

  std::uint64_t sets_made() const noexcept { return sets_made_; }

 private:
  struct Pool {
    VkDescriptorPool pool;
    std::uint32_t free_sets;
  };
  struct Retired {
    SubmitIndex index;
    SetRef ref;
  };
  Painter(const vk::Device& device, const Fns& fns, QueueTracker& tracker, MemoKeying keying)
      : device_(device), fns_(fns), tracker_(tracker), memo_(keying) {}
  Result<SetRef> allocate();
  void retire(SetRef ref);
  void free_retired();

  const vk::Device& device_;
  const Fns& fns_;
  QueueTracker& tracker_;
  BindingMemo<SetRef> memo_;
  VkBuffer output_ = VK_NULL_HANDLE;
  VkDeviceSize output_bytes_ = 0;
  VkShaderModule shader_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  std::vector<Pool> pools_;
  std::deque<Retired> retired_;
  std::uint64_t bound_in_recording_ = 0;  // recordings_begun() when the pipeline was last bound
  std::uint64_t sets_made_ = 0;
};

}  // namespace extmem::reclaim::vkr
