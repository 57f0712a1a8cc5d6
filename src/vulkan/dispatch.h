// Vulkan entry points, resolved at run time from a dlopen()ed loader.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>

#include "extmem/core/error.h"

namespace extmem::vk {

#define EXTMEM_VK_INSTANCE_FUNCS(X)             \
  X(vkDestroyInstance)                          \
  X(vkEnumeratePhysicalDevices)                 \
  X(vkGetPhysicalDeviceProperties)              \
  X(vkGetPhysicalDeviceProperties2)             \
  X(vkGetPhysicalDeviceMemoryProperties)        \
  X(vkGetPhysicalDeviceQueueFamilyProperties)   \
  X(vkEnumerateDeviceExtensionProperties)       \
  X(vkGetPhysicalDeviceExternalBufferProperties) \
  X(vkGetPhysicalDeviceExternalSemaphoreProperties) \
  X(vkGetPhysicalDeviceImageFormatProperties2)  \
  X(vkGetPhysicalDeviceFormatProperties2)       \
  X(vkGetPhysicalDeviceCalibrateableTimeDomainsEXT) \
  X(vkCreateDevice)                             \
  X(vkGetDeviceProcAddr)

#define EXTMEM_VK_DEVICE_FUNCS(X)    \
  X(vkDestroyDevice)                 \
  X(vkGetDeviceQueue)                \
  X(vkCreateBuffer)                  \
  X(vkDestroyBuffer)                 \
  X(vkGetBufferMemoryRequirements2)  \
  X(vkAllocateMemory)                \
  X(vkFreeMemory)                    \
  X(vkBindBufferMemory)              \
  X(vkCreateImage)                   \
  X(vkDestroyImage)                  \
  X(vkGetImageMemoryRequirements2)   \
  X(vkBindImageMemory)               \
  X(vkGetImageSubresourceLayout)     \
  X(vkCmdCopyBufferToImage)          \
  X(vkCmdCopyImageToBuffer)          \
  X(vkCmdClearColorImage)            \
  X(vkMapMemory)                     \
  X(vkUnmapMemory)                   \
  X(vkCreateCommandPool)             \
  X(vkDestroyCommandPool)            \
  X(vkAllocateCommandBuffers)        \
  X(vkBeginCommandBuffer)            \
  X(vkEndCommandBuffer)              \
  X(vkCmdCopyBuffer)                 \
  X(vkCmdPipelineBarrier)            \
  X(vkCreateQueryPool)               \
  X(vkDestroyQueryPool)              \
  X(vkCmdResetQueryPool)             \
  X(vkCmdWriteTimestamp)             \
  X(vkGetQueryPoolResults)           \
  X(vkQueueSubmit)                   \
  X(vkCreateFence)                   \
  X(vkDestroyFence)                  \
  X(vkWaitForFences)

// Extension entry points: null when the extension was not enabled.
#define EXTMEM_VK_DEVICE_EXT_FUNCS(X) \
  X(vkGetMemoryFdKHR)                 \
  X(vkGetMemoryFdPropertiesKHR)       \
  X(vkGetMemoryHostPointerPropertiesEXT) \
  X(vkGetCalibratedTimestampsEXT)

#define EXTMEM_VK_DECLARE(name) PFN_##name name = nullptr;

/// The dlopen()ed loader; closed when the last owner goes.
struct LoaderLibrary {
  void* handle = nullptr;
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  PFN_vkCreateInstance create_instance = nullptr;
  PFN_vkEnumerateInstanceVersion enumerate_instance_version = nullptr;
  ~LoaderLibrary();
};

/// Opens libvulkan.so.1 (then libvulkan.so). Errors: unsupported, step
/// "dlopen(libvulkan.so.1)", code = dlerror() text.
Result<std::shared_ptr<LoaderLibrary>> open_loader();

struct InstanceFns {
  EXTMEM_VK_INSTANCE_FUNCS(EXTMEM_VK_DECLARE)
};
struct DeviceFns {
  EXTMEM_VK_DEVICE_FUNCS(EXTMEM_VK_DECLARE)
  EXTMEM_VK_DEVICE_EXT_FUNCS(EXTMEM_VK_DECLARE)
};

/// Name of a VkResult, e.g. "VK_ERROR_INVALID_EXTERNAL_HANDLE"; "VkResult(N)" when unknown.
const char* result_name(VkResult r);

/// A driver error for `step`: code the VkResult name, native `r`.
Error vk_error(std::string step, VkResult r, std::string detail = {});

}  // namespace extmem::vk
