// Exportable and importable 2D images (VK_KHR_external_memory, core in 1.1):
// the capability query the image rows decide UNSUPPORTED-vs-FAIL with, and an
// owned image bound to its own memory. docs/probe.md, "T4 image rows".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vulkan/context.h"

namespace extmem::vk {

/// Image usage every image row creates its images with (the render
/// target and texture uses): copy in, copy out, sample, render to.
inline constexpr VkImageUsageFlags kRouteImageUsage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                                                      VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
/// The one format the image rows use: 4 bytes a texel, the same in GL (GL_RGBA8) and CUDA (4 x uint8).
inline constexpr VkFormat kRouteImageFormat = VK_FORMAT_R8G8B8A8_UNORM;

/// Everything an importer must repeat of the exporter's VkImageCreateInfo
/// (Vulkan spec, "External memory handle types compatibility": the image must
/// be created with the same parameters). One mip level, one layer, 1 sample.
struct ImageShape {
  VkFormat format = kRouteImageFormat;
  std::uint32_t width = 0, height = 0;   ///< texels
  VkImageTiling tiling = VK_IMAGE_TILING_OPTIMAL;
  VkImageUsageFlags usage = kRouteImageUsage;
  VkImageCreateFlags flags = 0;
};

/// "OPTIMAL", "LINEAR", "DRM_FORMAT_MODIFIER" or "VkImageTiling(N)".
std::string tiling_name(VkImageTiling tiling);

/// What vkGetPhysicalDeviceImageFormatProperties2 with
/// VkPhysicalDeviceExternalImageFormatInfo says about one handle type for one
/// format x tiling x usage x flags. `result` is the call's VkResult verbatim:
/// VK_ERROR_FORMAT_NOT_SUPPORTED means the combination is not supported at all
/// (then `external` and `limits` are zero).
struct ExternalImageSupport {
  VkResult result = VK_ERROR_FORMAT_NOT_SUPPORTED;
  VkExternalMemoryProperties external{};  ///< features, exportFromImportedHandleTypes, compatibleHandleTypes
  VkImageFormatProperties limits{};       ///< maxExtent (texels), maxMipLevels, maxArrayLayers, maxResourceSize (bytes)

  bool exportable() const { return result == VK_SUCCESS && (external.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT); }
  bool importable() const { return result == VK_SUCCESS && (external.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT); }
  bool dedicated_only() const { return result == VK_SUCCESS && (external.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT); }
};

/// Queries external image support of `handle_type` on physical device `pd` for
/// `shape` (width/height are not part of the query). `drm_modifier` >= 0 chains
/// VkPhysicalDeviceImageDrmFormatModifierInfoEXT (only with tiling
/// DRM_FORMAT_MODIFIER_EXT, only where VK_EXT_image_drm_format_modifier exists).
ExternalImageSupport external_image_support(const Instance& instance, VkPhysicalDevice pd, const ImageShape& shape,
                                            VkExternalMemoryHandleTypeFlagBits handle_type,
                                            std::int64_t drm_modifier = -1);

/// How to create an image and its memory.
struct ImageRequest {
  ImageShape shape;
  VkExternalMemoryHandleTypeFlags external_handle_types = 0;  ///< VkExternalMemoryImageCreateInfo (0: a private image)
  bool export_memory = false;       ///< chain VkExportMemoryAllocateInfo with external_handle_types
  int import_fd = -1;               ///< chain VkImportMemoryFdInfoKHR; the driver owns the fd once vkAllocateMemory succeeds
  VkExternalMemoryHandleTypeFlagBits import_fd_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkDeviceSize allocation_size = 0; ///< bytes; 0: VkMemoryRequirements::size (an importer passes the exporter's)
  int memory_type_index = -1;       ///< -1: the first type of the image's memoryTypeBits with required_flags
  VkMemoryPropertyFlags required_flags = 0;
  /// Tried first together with required_flags; when no type has both, a type
  /// with required_flags alone (the caller's fallback, without a second image).
  VkMemoryPropertyFlags preferred_flags = 0;
  int dedicated = -1;               ///< 1/0 force; -1: when the image requires or prefers it
  bool map = false;                 ///< vkMapMemory the whole allocation (LINEAR images in HOST_VISIBLE memory)
};

/// The DRM format modifiers the driver lists for kRouteImageFormat
/// (vkGetPhysicalDeviceFormatProperties2 + VkDrmFormatModifierPropertiesListEXT),
/// each with the DMA_BUF external image query for that modifier (tiling
/// DRM_FORMAT_MODIFIER_EXT, usage kRouteImageUsage). Call only where the device
/// exposes VK_EXT_image_drm_format_modifier (else the structure is unknown to it).
std::vector<DrmModifierInfo> drm_modifiers(const Instance& instance, VkPhysicalDevice pd);

/// A VkImage bound to its own VkDeviceMemory (optionally mapped). Move-only;
/// destroys the image and frees the memory on destruction. The device must outlive it.
class Image;
Result<Image> create_image(const Device& device, const ImageRequest& req, AllocationFailure* failure);

class Image {
 public:
  Image() = default;
  Image(Image&& o) noexcept;
  Image& operator=(Image&& o) noexcept;
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;
  ~Image();

  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  ImageShape shape;
  VkDeviceSize allocation_size = 0;     ///< bytes allocated (from VkMemoryRequirements or the exporter's announcement)
  std::uint32_t memory_type_index = 0;
  bool dedicated = false;               ///< allocated with VkMemoryDedicatedAllocateInfo naming this image
  bool dedicated_required = false, dedicated_preferred = false;  ///< VkMemoryDedicatedRequirements of the image
  std::byte* mapped = nullptr;          ///< whole allocation mapped (ImageRequest::map), or null

 private:
  friend Result<Image> create_image(const Device&, const ImageRequest&, AllocationFailure*);
  const Device* device_ = nullptr;
  void reset() noexcept;
};

/// Creates the image (VK_IMAGE_LAYOUT_UNDEFINED, exclusive sharing), allocates
/// and binds its memory per `req`, maps it when asked. Errors, with
/// `failure->at_allocate` set when vkAllocateMemory itself declined (the
/// export/import site): vk_error("vkCreateImage"|"vkAllocateMemory"|
/// "vkBindImageMemory"|"vkMapMemory"), unsupported "choose memory type" when no
/// type has required_flags. On failure nothing is left allocated; `failure->memory_allocated`
/// says whether an imported fd was already taken by the driver.
Result<Image> create_image(const Device& device, const ImageRequest& req, AllocationFailure* failure = nullptr);

/// vkGetImageSubresourceLayout of the colour aspect, mip 0, layer 0 (LINEAR
/// images only): offset and rowPitch in bytes from the start of the memory binding.
VkSubresourceLayout linear_layout(const Device& device, const Image& image);

/// Records a whole-image copy image -> `buffer` (tightly packed rows) with the image in `layout`.
void record_copy_to_buffer(const Device& device, VkCommandBuffer cb, const Image& image, VkImageLayout layout, VkBuffer buffer);

/// Records a copy of `buffer` (tightly packed rows of `w` texels) into the
/// rectangle (x, y, w, h) of `image` in `layout`.
void record_copy_from_buffer(const Device& device, VkCommandBuffer cb, VkBuffer buffer, const Image& image,
                             VkImageLayout layout, std::int32_t x, std::int32_t y, std::uint32_t w, std::uint32_t h);

/// Records one image memory barrier on the colour subresource: a layout
/// transition and/or a queue family ownership transfer (src/dst family
/// VK_QUEUE_FAMILY_EXTERNAL for a release or acquire across APIs and processes;
/// Vulkan spec, "Queue Family Ownership Transfer").
void record_image_barrier(const Device& device, VkCommandBuffer cb, const Image& image, VkImageLayout old_layout,
                          VkImageLayout new_layout, std::uint32_t src_family, std::uint32_t dst_family,
                          VkAccessFlags src_access, VkAccessFlags dst_access, VkPipelineStageFlags src_stage,
                          VkPipelineStageFlags dst_stage);

}  // namespace extmem::vk
