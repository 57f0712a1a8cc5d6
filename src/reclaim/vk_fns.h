// Device entry points the reclaim binding needs beyond vk::DeviceFns
// (fence polling, compute pipelines, descriptor sets), resolved the same way.
#pragma once

#include "vulkan/compute_fns.h"
#include "vulkan/context.h"

namespace extmem::reclaim::vkr {

#define EXTMEM_RECLAIM_VK_FUNCS(X) \
  X(vkGetFenceStatus)              \
  X(vkResetFences)                 \
  X(vkFreeCommandBuffers)          \
  X(vkDeviceWaitIdle)              \
  EXTMEM_VK_COMPUTE_FUNCS(X)

// VK_KHR_timeline_semaphore (core in Vulkan 1.2; the instance here is 1.1, so the KHR names).
#define EXTMEM_RECLAIM_VK_TIMELINE_FUNCS(X) \
  X(vkCreateSemaphore)                      \
  X(vkDestroySemaphore)                     \
  X(vkGetSemaphoreCounterValueKHR)          \
  X(vkWaitSemaphoresKHR)

/// The extra entry points plus the device's own table.
struct Fns {
  const vk::DeviceFns* base = nullptr;
  EXTMEM_RECLAIM_VK_FUNCS(EXTMEM_VK_DECLARE)
  /// Null unless VK_KHR_timeline_semaphore is enabled on the device.
  EXTMEM_RECLAIM_VK_TIMELINE_FUNCS(EXTMEM_VK_DECLARE)
};

/// Resolves every entry point through vkGetDeviceProcAddr. Errors: unsupported,
/// step "vkGetDeviceProcAddr(NAME)", for the first one the driver does not give.
Result<Fns> load_fns(const vk::Device& device);

}  // namespace extmem::reclaim::vkr
