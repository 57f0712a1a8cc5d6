#include "reclaim/vk_tracker.h"

#include <fmt/format.h>

namespace extmem::reclaim::vkr {

namespace {
// A wait this long on lavapipe or a GPU means a hang; report it instead of blocking forever.
constexpr std::uint64_t kWaitTimeoutNs = 60'000'000'000ull;
}  // namespace

Result<std::unique_ptr<QueueTracker>> QueueTracker::create(const vk::Device& device, const Fns& fns, bool timeline) {
  std::unique_ptr<QueueTracker> t(new QueueTracker(device, fns));
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = device.queue_family();
  VkResult r = fns.base->vkCreateCommandPool(device.handle(), &pci, nullptr, &t->pool_);
  if (r != VK_SUCCESS) return vk::vk_error("vkCreateCommandPool", r);
  if (timeline) {
    if (fns.vkCreateSemaphore == nullptr || fns.vkGetSemaphoreCounterValueKHR == nullptr ||
        fns.vkWaitSemaphoresKHR == nullptr)
      return Error{"timeline tracker", ErrorKind::unsupported, {}, "VK_KHR_timeline_semaphore is not enabled"};
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    type.initialValue = 0;
    VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    sci.pNext = &type;
    r = fns.vkCreateSemaphore(device.handle(), &sci, nullptr, &t->timeline_);
    if (r != VK_SUCCESS) return vk::vk_error("vkCreateSemaphore(timeline)", r);
  }
  return t;
}

QueueTracker::~QueueTracker() {
  VkDevice dev = device_.handle();
  fns_.vkDeviceWaitIdle(dev);
  auto drop_fence = [&](VkFence f) {
    if (f != VK_NULL_HANDLE) fns_.base->vkDestroyFence(dev, f, nullptr);
  };
  drop_fence(open_fence_);
  for (const InFlight& f : in_flight_) drop_fence(f.fence);
  for (VkFence f : spare_fences_) drop_fence(f);
  if (timeline_ != VK_NULL_HANDLE) fns_.vkDestroySemaphore(dev, timeline_, nullptr);
  // Destroying the pool frees every command buffer allocated from it.
  if (pool_ != VK_NULL_HANDLE) fns_.base->vkDestroyCommandPool(dev, pool_, nullptr);
}

Result<VkCommandBuffer> QueueTracker::recording() {
  if (open_ != VK_NULL_HANDLE) return open_;
  const vk::DeviceFns& f = *fns_.base;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  if (!spare_cmds_.empty()) {
    cmd = spare_cmds_.back();
    spare_cmds_.pop_back();
  } else {
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VkResult r = f.vkAllocateCommandBuffers(device_.handle(), &cai, &cmd);
    if (r != VK_SUCCESS) return vk::vk_error("vkAllocateCommandBuffers", r);
  }
  VkFence fence = VK_NULL_HANDLE;
  if (uses_timeline()) {
    // The timeline's value says which submissions are done; no fence needed.
  } else if (!spare_fences_.empty()) {
    fence = spare_fences_.back();
    spare_fences_.pop_back();
  } else {
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult r = f.vkCreateFence(device_.handle(), &fci, nullptr, &fence);
    if (r != VK_SUCCESS) {
      spare_cmds_.push_back(cmd);
      return vk::vk_error("vkCreateFence", r);
    }
  }
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  // Begin implicitly resets a buffer from a pool with RESET_COMMAND_BUFFER_BIT.
  VkResult r = f.vkBeginCommandBuffer(cmd, &bi);
  if (r != VK_SUCCESS) {
    spare_cmds_.push_back(cmd);
    if (fence != VK_NULL_HANDLE) spare_fences_.push_back(fence);
    return vk::vk_error("vkBeginCommandBuffer", r);
  }
  open_ = cmd;
  open_fence_ = fence;
  ++begun_;
  return cmd;
}

Status QueueTracker::flush() {
  if (open_ == VK_NULL_HANDLE) return {};
  const vk::DeviceFns& f = *fns_.base;
  // Make shader and transfer writes visible to host reads once the fence signals.
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  f.vkCmdPipelineBarrier(open_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
  VkResult r = f.vkEndCommandBuffer(open_);
  if (r != VK_SUCCESS) {
    discard();
    return vk::vk_error("vkEndCommandBuffer", r);
  }
  const std::uint64_t index = last_submitted_ + 1;
  VkTimelineSemaphoreSubmitInfo tsi{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  tsi.signalSemaphoreValueCount = 1;
  tsi.pSignalSemaphoreValues = &index;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &open_;
  if (uses_timeline()) {
    si.pNext = &tsi;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &timeline_;
  }
  r = f.vkQueueSubmit(device_.queue(), 1, &si, open_fence_);
  if (r != VK_SUCCESS) {
    discard();
    return vk::vk_error("vkQueueSubmit", r, fmt::format("submit index {}", last_submitted_ + 1));
  }
  in_flight_.push_back(InFlight{++last_submitted_, open_fence_, open_});
  open_ = VK_NULL_HANDLE;
  open_fence_ = VK_NULL_HANDLE;
  return {};
}

void QueueTracker::discard() {
  if (open_ == VK_NULL_HANDLE) return;
  spare_cmds_.push_back(open_);  // the next vkBeginCommandBuffer resets it
  if (open_fence_ != VK_NULL_HANDLE) spare_fences_.push_back(open_fence_);
  open_ = VK_NULL_HANDLE;
  open_fence_ = VK_NULL_HANDLE;
}

SubmitIndex QueueTracker::sync_point() const {
  return SubmitIndex{open_ != VK_NULL_HANDLE ? last_submitted_ + 1 : last_submitted_};
}

void QueueTracker::retire_through(std::uint64_t index) {
  while (!in_flight_.empty() && in_flight_.front().index <= index) {
    InFlight done = in_flight_.front();
    in_flight_.pop_front();
    if (done.fence != VK_NULL_HANDLE) {
      fns_.vkResetFences(device_.handle(), 1, &done.fence);
      spare_fences_.push_back(done.fence);
    }
    spare_cmds_.push_back(done.cmd);
  }
  if (index > completed_) completed_ = index;
}

bool QueueTracker::is_complete(SubmitIndex index) {
  if (index.value <= completed_) return true;
  if (index.value > last_submitted_) return false;
  ++polls_;
  if (uses_timeline()) {
    std::uint64_t value = 0;
    // A failed read (device lost) proves nothing: report incomplete; the next wait reports the error.
    if (fns_.vkGetSemaphoreCounterValueKHR(device_.handle(), timeline_, &value) != VK_SUCCESS) return false;
    if (value >= last_submitted_) value = last_submitted_;
    retire_through(value);
    return value >= index.value;
  }
  const InFlight& entry = in_flight_[index.value - in_flight_.front().index];
  if (fns_.vkGetFenceStatus(device_.handle(), entry.fence) != VK_SUCCESS) return false;
  // This fence's signal covers every earlier submission on the queue.
  retire_through(index.value);
  return true;
}

Status QueueTracker::flush_and_wait(SubmitIndex index) {
  if (open_ != VK_NULL_HANDLE && index.value == last_submitted_ + 1) {
    Status s = flush();
    if (!s) return s;
  }
  if (index.value <= completed_) return {};
  if (index.value > last_submitted_)
    return Error{"flush and wait", ErrorKind::invalid_argument, {},
                 fmt::format("submit index {} was never submitted (last {})", index.value, last_submitted_)};
  if (uses_timeline()) {
    VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wi.semaphoreCount = 1;
    wi.pSemaphores = &timeline_;
    wi.pValues = &index.value;
    VkResult r = fns_.vkWaitSemaphoresKHR(device_.handle(), &wi, kWaitTimeoutNs);
    if (r != VK_SUCCESS) return vk::vk_error("vkWaitSemaphoresKHR", r, fmt::format("submit index {}", index.value));
    retire_through(index.value);
    return {};
  }
  VkFence fence = in_flight_[index.value - in_flight_.front().index].fence;
  VkResult r = fns_.base->vkWaitForFences(device_.handle(), 1, &fence, VK_TRUE, kWaitTimeoutNs);
  if (r != VK_SUCCESS) return vk::vk_error("vkWaitForFences", r, fmt::format("submit index {}", index.value));
  retire_through(index.value);
  return {};
}

}  // namespace extmem::reclaim::vkr
