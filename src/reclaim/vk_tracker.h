// SubmitTracker over one Vulkan queue: one open recording at a time,
// submissions indexed 1, 2, 3, ... in submission order. Completion is observed
// on a timeline semaphore whose value is the index (VK_KHR_timeline_semaphore),
// or, where that is absent, on one VkFence per submission.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "extmem/reclaim/deferred_list.h"
#include "reclaim/vk_fns.h"

namespace extmem::reclaim::vkr {

class QueueTracker final : public SubmitTracker {
 public:
  /// Creates its own command pool on the device's queue family and, with
  /// `timeline`, a timeline semaphore starting at 0 (the device must have
  /// VK_KHR_timeline_semaphore enabled with its feature). Errors: vk_error of
  /// vkCreateCommandPool / vkCreateSemaphore.
  static Result<std::unique_ptr<QueueTracker>> create(const vk::Device& device, const Fns& fns, bool timeline);
  /// Waits for the device, then frees the semaphore, fences, command buffers and pool.
  ~QueueTracker() override;

  bool uses_timeline() const noexcept { return timeline_ != VK_NULL_HANDLE; }
  /// The open recording, beginning one when none is open. Errors: the failing
  /// vkAllocateCommandBuffers / vkCreateFence / vkBeginCommandBuffer.
  Result<VkCommandBuffer> recording();
  /// Counts recordings begun; a change tells a recorder to re-bind its pipeline.
  std::uint64_t recordings_begun() const noexcept { return begun_; }
  /// Ends and submits the open recording (nothing when none is open); the
  /// submission signals the timeline to its index, or its fence.
  /// Errors: vkEndCommandBuffer / vkQueueSubmit, code verbatim; the recording is dropped.
  Status flush();
  /// Drops the open recording unsubmitted; its index is not used.
  void discard();
  /// The index of the last submission (0: none yet).
  SubmitIndex last_submitted() const noexcept { return SubmitIndex{last_submitted_}; }
  /// Highest index known complete without polling.
  SubmitIndex completed() const noexcept { return SubmitIndex{completed_}; }
  /// Completion polls made (vkGetSemaphoreCounterValueKHR or vkGetFenceStatus calls).
  std::uint64_t polls() const noexcept { return polls_; }

  SubmitIndex sync_point() const override;
  bool is_complete(SubmitIndex index) override;
  Status flush_and_wait(SubmitIndex index) override;

 private:
  struct InFlight {
    std::uint64_t index;
    VkFence fence;  // null on the timeline
    VkCommandBuffer cmd;
  };
  QueueTracker(const vk::Device& device, const Fns& fns) : device_(device), fns_(fns) {}
  void retire_through(std::uint64_t index);

  const vk::Device& device_;
  const Fns& fns_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
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
