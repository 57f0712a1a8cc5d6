// Phase A, Vulkan part: every physical device with identity, memory,
// external-buffer and external-image properties (docs/probe.md, "Phase A").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::vk {

struct MemoryHeapInfo {
  std::uint64_t size = 0;   ///< bytes
  std::uint32_t flags = 0;  ///< VkMemoryHeapFlags
  std::string flag_names;   ///< "DEVICE_LOCAL" or ""
};

struct MemoryTypeInfo {
  std::uint32_t index = 0;       ///< memory type index
  std::uint32_t heap_index = 0;
  std::uint32_t flags = 0;       ///< VkMemoryPropertyFlags
  std::string flag_names;        ///< "DEVICE_LOCAL|HOST_VISIBLE|..."; "" for none
};

/// vkGetPhysicalDeviceExternalBufferProperties for one handle type, with usage
/// TRANSFER_SRC|TRANSFER_DST|STORAGE|UNIFORM (VK_KHR_external_memory_capabilities, core 1.1).
struct ExternalBufferInfo {
  std::string handle_type;          ///< "OPAQUE_FD", "DMA_BUF", "HOST_ALLOCATION", "AHARDWAREBUFFER"
  std::uint32_t handle_type_bit = 0;
  std::uint32_t features = 0;       ///< VkExternalMemoryFeatureFlags
  bool exportable = false;
  bool importable = false;
  bool dedicated_only = false;
  std::uint32_t export_from = 0;    ///< exportFromImportedHandleTypes
  std::uint32_t compatible = 0;     ///< compatibleHandleTypes
};

/// vkGetPhysicalDeviceExternalSemaphoreProperties for one handle type and semaphore
/// type (VK_KHR_external_semaphore_capabilities, core 1.1; the timeline query
/// chains VkSemaphoreTypeCreateInfo and is made only with VK_KHR_timeline_semaphore).
struct ExternalSemaphoreInfo {
  std::string handle_type;          ///< "OPAQUE_FD", "SYNC_FD"
  std::string semaphore_type;       ///< "binary", "timeline"
  bool queried = false;             ///< false: not asked (timeline without VK_KHR_timeline_semaphore, or Vulkan 1.0)
  std::uint32_t features = 0;       ///< VkExternalSemaphoreFeatureFlags
  bool exportable = false;
  bool importable = false;
  std::uint32_t export_from = 0;    ///< exportFromImportedHandleTypes
  std::uint32_t compatible = 0;     ///< compatibleHandleTypes
};

/// vkGetPhysicalDeviceImageFormatProperties2 with VkPhysicalDeviceExternalImageFormatInfo
/// for one handle type and tiling, for the image rows' format (R8G8B8A8_UNORM) and usage
/// (TRANSFER_SRC|TRANSFER_DST|SAMPLED|COLOR_ATTACHMENT), 2D, no create flags
/// (VK_KHR_external_memory_capabilities, core 1.1; docs/probe.md, "T4 image rows").
struct ExternalImageInfo {
  std::string handle_type;          ///< "OPAQUE_FD", "DMA_BUF"
  std::string tiling;               ///< "OPTIMAL", "LINEAR"
  std::string result;               ///< the query's VkResult verbatim ("VK_SUCCESS", "VK_ERROR_FORMAT_NOT_SUPPORTED")
  std::int32_t result_code = 0;     ///< that VkResult's value: what code branches on
  std::uint32_t features = 0;       ///< VkExternalMemoryFeatureFlags; 0 unless result is VK_SUCCESS
  bool exportable = false;
  bool importable = false;
  bool dedicated_only = false;
  std::uint32_t export_from = 0;    ///< exportFromImportedHandleTypes
  std::uint32_t compatible = 0;     ///< compatibleHandleTypes
  std::uint32_t max_width = 0, max_height = 0;  ///< maxExtent, texels
  std::uint32_t max_mip_levels = 0, max_array_layers = 0;

  /// Whether the query returned VK_SUCCESS (0).
  bool succeeded() const noexcept { return result_code == 0; }
};

/// One DRM format modifier the driver lists for R8G8B8A8_UNORM
/// (VkDrmFormatModifierPropertiesListEXT, VK_EXT_image_drm_format_modifier),
/// with the DMA_BUF image query for that modifier (tiling DRM_FORMAT_MODIFIER_EXT).
struct DrmModifierInfo {
  std::uint64_t modifier = 0;       ///< fourcc modifier value (DRM_FORMAT_MOD_LINEAR is 0)
  std::uint32_t plane_count = 0;    ///< drmFormatModifierPlaneCount
  std::uint32_t tiling_features = 0;///< drmFormatModifierTilingFeatures (VkFormatFeatureFlags)
  std::string dma_buf_result;       ///< VkResult of the DMA_BUF query with this modifier, verbatim
  std::int32_t dma_buf_result_code = 0;  ///< that VkResult's value: what code branches on
  bool dma_buf_exportable = false;
  bool dma_buf_importable = false;

  /// Whether the DMA_BUF query returned VK_SUCCESS (0).
  bool dma_buf_succeeded() const noexcept { return dma_buf_result_code == 0; }
};

struct DeviceInfo {
  std::uint32_t index = 0;
  std::string name;
  std::uint32_t vendor_id = 0, device_id = 0;
  std::string device_type;          ///< "DISCRETE_GPU", "INTEGRATED_GPU", "CPU", ...
  std::string api_version;          ///< "1.3.230"
  std::uint32_t driver_version = 0; ///< raw, vendor-encoded
  std::string driver_name, driver_info;  ///< VkPhysicalDeviceDriverProperties (Vulkan 1.2), "" before
  std::string device_uuid, driver_uuid;  ///< 32 lower-case hex digits
  std::vector<MemoryHeapInfo> heaps;
  std::vector<MemoryTypeInfo> types;
  std::vector<std::pair<std::string, bool>> extensions;  ///< the extensions the routes use, present or not; sorted by name
  std::vector<ExternalBufferInfo> external_buffers;      ///< one per handle type above
  std::vector<ExternalSemaphoreInfo> external_semaphores; ///< OPAQUE_FD and SYNC_FD, each binary and timeline (the S1 rows)
  std::uint64_t min_imported_host_pointer_alignment = 0; ///< bytes; 0 without VK_EXT_external_memory_host
  std::uint32_t max_image_dimension_2d = 0;             ///< VkPhysicalDeviceLimits::maxImageDimension2D, texels
  std::vector<ExternalImageInfo> external_images;       ///< OPAQUE_FD, DMA_BUF x OPTIMAL, LINEAR
  std::vector<DrmModifierInfo> drm_modifiers;           ///< empty without VK_EXT_image_drm_format_modifier
};

struct VulkanEnumeration {
  std::string loader_version;  ///< "1.3.239"
  std::vector<DeviceInfo> devices;
};

/// Loads the Vulkan loader, creates an instance and describes every physical
/// device. Errors: unsupported when no loader (step "dlopen(libvulkan.so.1)")
/// or only Vulkan 1.0; vk_error("vkCreateInstance"|"vkEnumeratePhysicalDevices").
Result<VulkanEnumeration> enumerate();

/// Resolves --device=SPEC: all digits = index; 32 hex digits (dashes allowed) =
/// deviceUUID; otherwise a case-insensitive name substring that must match
/// exactly one device. Empty SPEC: the first non-CPU device, else device 0.
/// Errors: invalid_argument with the accepted forms and the device list.
Result<std::uint32_t> select_device(const std::vector<DeviceInfo>& devices, const std::string& spec);

/// "DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT|HOST_CACHED|LAZILY_ALLOCATED|PROTECTED|..." for VkMemoryPropertyFlags.
std::string memory_property_names(std::uint32_t flags);

}  // namespace extmem::vk
