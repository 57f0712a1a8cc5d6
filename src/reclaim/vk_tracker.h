// SubmitTracker over one Vulkan queue: one open recording at a time, one fence
// per submission, indices 1, 2, 3, ... in submission order.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "extmem/reclaim/deferred_list.h"
#include "reclaim/vk_fns.h"

namespace extmem::reclaim::vkr {

class FenceTracker final : public SubmitTracker {
 public:
  /// Creates its own command pool on the device's queue family.
  /// Errors: vk_error("vkCreateCommandPool").
  static Result<std::unique_ptr<FenceTracker>> create(const vk::Device& device, const Fns& fns);
  /// Waits for the device, then frees fences, command buffers and the pool.
  ~FenceTracker() override;

  /// The open recording, beginning one when none is open. Errors: the failing
  /// vkAllocateCommandBuffers / vkCreateFence / vkBeginCommandBuffer.
  Result<VkCommandBuffer> recording();
  /// Counts recordings begun; a change tells a recorder to re-bind its pipeline.
  std::uint64_t recordings_begun() const noexcept { return begun_; }
  /// Ends and submits the open recording with its fence (nothing when none is
  /// open). Errors: vkEndCommandBuffer / vkQueueSubmit, code verbatim.
  Status flush();
  /// Drops the open recording unsubmitted; its index is not used.
  void discard();
  /// The index of the last submission (0: none yet).
  SubmitIndex last_submitted() const noexcept { return SubmitIndex{last_submitted_}; }
  /// Highest index known complete without polling.
  SubmitIndex completed() const noexcept { return SubmitIndex{completed_}; }
  /// Fence polls made (vkGetFenceStatus calls).
  std::uint64_t polls() const noexcept { return polls_; }

  SubmitIndex sync_point() const override;
  bool is_complete(SubmitIndex index) override;
  Status flush_and_wait(SubmitIndex index) override;

 private:
  struct InFlight {
    std::uint64_t index;
    VkFence fence;
    VkCommandBuffer cmd;
  };
  FenceTracker(const vk::Device& device, const Fns& fns) : device_(device), fns_(fns) {}
  void retire_through(std::uint64_t index);

  const vk::Device& device_;
  const Fns& fns_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer open_ = VK_NULL_HANDLE;
  VkFence open_fence_ = VK_NULL_HANDLE;
  std::deque<InFlight> in_flight_;
  std::vector<VkCommandBuffer> spare_cmds_;
  std::vector<VkFence> spare_fences_;  // unsignalled
  std::uint64_t last_submitted_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t begun_ = 0;
  std::uint64_t polls_ = 0;
};

}  // namespace extmem::reclaim::vkr
