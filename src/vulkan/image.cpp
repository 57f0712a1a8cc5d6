#include "vulkan/image.h"

#include <utility>

#include <fmt/format.h>

namespace extmem::vk {

std::string tiling_name(VkImageTiling tiling) {
  switch (tiling) {
    case VK_IMAGE_TILING_OPTIMAL: return "OPTIMAL";
    case VK_IMAGE_TILING_LINEAR: return "LINEAR";
    case VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT: return "DRM_FORMAT_MODIFIER";
    default: return fmt::format("VkImageTiling({})", static_cast<int>(tiling));
  }
}

ExternalImageSupport external_image_support(const Instance& instance, VkPhysicalDevice pd, const ImageShape& shape,
                                            VkExternalMemoryHandleTypeFlagBits handle_type, std::int64_t drm_modifier) {
  VkPhysicalDeviceImageDrmFormatModifierInfoEXT mod{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_DRM_FORMAT_MODIFIER_INFO_EXT};
  mod.drmFormatModifier = static_cast<std::uint64_t>(drm_modifier);
  mod.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkPhysicalDeviceExternalImageFormatInfo ext{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO};
  ext.handleType = handle_type;
  if (drm_modifier >= 0) ext.pNext = &mod;
  VkPhysicalDeviceImageFormatInfo2 info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2};
  info.pNext = &ext;
  info.format = shape.format;
  info.type = VK_IMAGE_TYPE_2D;
  info.tiling = shape.tiling;
  info.usage = shape.usage;
  info.flags = shape.flags;
  VkExternalImageFormatProperties ext_props{VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES};
  VkImageFormatProperties2 props{VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2};
  props.pNext = &ext_props;
  ExternalImageSupport out;
  out.result = instance.fn().vkGetPhysicalDeviceImageFormatProperties2(pd, &info, &props);
  if (out.result == VK_SUCCESS) {
    out.external = ext_props.externalMemoryProperties;
    out.limits = props.imageFormatProperties;
  }
  return out;
}

Image::Image(Image&& o) noexcept { *this = std::move(o); }

Image& Image::operator=(Image&& o) noexcept {
  if (this != &o) {
    reset();
    image = std::exchange(o.image, VK_NULL_HANDLE);
    memory = std::exchange(o.memory, VK_NULL_HANDLE);
    shape = o.shape;
    allocation_size = o.allocation_size;
    memory_type_index = o.memory_type_index;
    dedicated = o.dedicated;
    dedicated_required = o.dedicated_required;
    dedicated_preferred = o.dedicated_preferred;
    mapped = std::exchange(o.mapped, nullptr);
    device_ = std::exchange(o.device_, nullptr);
  }
  return *this;
}

Image::~Image() { reset(); }

void Image::reset() noexcept {
  if (device_ == nullptr) return;
  const DeviceFns& f = device_->fn();
  if (mapped != nullptr) f.vkUnmapMemory(device_->handle(), memory);
  // The image goes before its memory (Vulkan spec: memory must not be freed while bound to a live image).
  if (image != VK_NULL_HANDLE) f.vkDestroyImage(device_->handle(), image, nullptr);
  if (memory != VK_NULL_HANDLE) f.vkFreeMemory(device_->handle(), memory, nullptr);
  image = VK_NULL_HANDLE;
  memory = VK_NULL_HANDLE;
  mapped = nullptr;
  device_ = nullptr;
}

namespace {

// vkCreateImage of the request's 2D shape, exportable as it asks.
VkResult create_vk_image(const Device& device, const ImageRequest& req, VkImage* image) {
  VkExternalMemoryImageCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO};
  ext.handleTypes = req.external_handle_types;
  VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ci.pNext = req.external_handle_types != 0 ? &ext : nullptr;
  ci.flags = req.shape.flags;
  ci.imageType = VK_IMAGE_TYPE_2D;
  ci.format = req.shape.format;
  ci.extent = {req.shape.width, req.shape.height, 1};
  ci.mipLevels = 1;
  ci.arrayLayers = 1;
  ci.samples = VK_SAMPLE_COUNT_1_BIT;
  ci.tiling = req.shape.tiling;
  ci.usage = req.shape.usage;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ci.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  return device.fn().vkCreateImage(device.handle(), &ci, nullptr, image);
}

}  // namespace

Result<Image> create_image(const Device& device, const ImageRequest& req, AllocationFailure* failure) {
  const DeviceFns& f = device.fn();
  Image out;
  out.device_ = &device;
  out.shape = req.shape;
  auto fail = [&](Error e, bool at_allocate) -> Result<Image> {
    if (failure != nullptr) *failure = AllocationFailure{e, at_allocate, out.memory != VK_NULL_HANDLE};
    return e;
  };

  VkResult r = create_vk_image(device, req, &out.image);
  if (r != VK_SUCCESS) {
    out.image = VK_NULL_HANDLE;
    return fail(vk_error("vkCreateImage", r,
                         fmt::format("{}x{} {}", req.shape.width, req.shape.height, tiling_name(req.shape.tiling))),
                false);
  }

  VkMemoryDedicatedRequirements dreq{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS};
  VkMemoryRequirements2 mreq{VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
  mreq.pNext = &dreq;
  VkImageMemoryRequirementsInfo2 rinfo{VK_STRUCTURE_TYPE_IMAGE_MEMORY_REQUIREMENTS_INFO_2};
  rinfo.image = out.image;
  f.vkGetImageMemoryRequirements2(device.handle(), &rinfo, &mreq);
  out.dedicated_required = dreq.requiresDedicatedAllocation;
  out.dedicated_preferred = dreq.prefersDedicatedAllocation;

  const std::uint32_t bits = mreq.memoryRequirements.memoryTypeBits;
  int type = req.memory_type_index >= 0 ? req.memory_type_index
                                        : device.find_memory_type(bits, req.required_flags | req.preferred_flags);
  if (type < 0 && req.preferred_flags != 0) type = device.find_memory_type(bits, req.required_flags);
  if (type < 0)
    return fail(Error{"choose memory type", ErrorKind::unsupported, {},
                      fmt::format("no memory type in the image's memoryTypeBits 0x{:x} has flags 0x{:x}", bits,
                                  req.required_flags)},
                false);
  out.memory_type_index = static_cast<std::uint32_t>(type);
  out.allocation_size = req.allocation_size != 0 ? req.allocation_size : mreq.memoryRequirements.size;
  out.dedicated = req.dedicated >= 0 ? req.dedicated == 1 : (out.dedicated_required || out.dedicated_preferred);

  MemoryChain chain = requested_chain(req, out.dedicated);
  chain.image = out.image;
  r = allocate_memory(device, chain, out.allocation_size, out.memory_type_index, &out.memory);
  if (r != VK_SUCCESS) {
    out.memory = VK_NULL_HANDLE;
    return fail(vk_error("vkAllocateMemory", r,
                         fmt::format("{} bytes, memory type {}{}", out.allocation_size, out.memory_type_index,
                                     out.dedicated ? ", dedicated" : "")),
                true);
  }
  r = f.vkBindImageMemory(device.handle(), out.image, out.memory, 0);
  if (r != VK_SUCCESS) return fail(vk_error("vkBindImageMemory", r), false);
  if (req.map) {
    void* p = nullptr;
    r = f.vkMapMemory(device.handle(), out.memory, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS) return fail(vk_error("vkMapMemory", r), false);
    out.mapped = static_cast<std::byte*>(p);
  }
  return out;
}

VkSubresourceLayout linear_layout(const Device& device, const Image& image) {
  VkImageSubresource sub{VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
  VkSubresourceLayout out{};
  device.fn().vkGetImageSubresourceLayout(device.handle(), image.image, &sub, &out);
  return out;
}

void record_copy_to_buffer(const Device& device, VkCommandBuffer cb, const Image& image, VkImageLayout layout,
                           VkBuffer buffer) {
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {image.shape.width, image.shape.height, 1};
  device.fn().vkCmdCopyImageToBuffer(cb, image.image, layout, buffer, 1, &region);
}

void record_copy_from_buffer(const Device& device, VkCommandBuffer cb, VkBuffer buffer, const Image& image,
                             VkImageLayout layout, std::int32_t x, std::int32_t y, std::uint32_t w, std::uint32_t h) {
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageOffset = {x, y, 0};
  region.imageExtent = {w, h, 1};
  device.fn().vkCmdCopyBufferToImage(cb, buffer, image.image, layout, 1, &region);
}

void record_image_barrier(const Device& device, VkCommandBuffer cb, const Image& image, VkImageLayout old_layout,
                          VkImageLayout new_layout, std::uint32_t src_family, std::uint32_t dst_family,
                          VkAccessFlags src_access, VkAccessFlags dst_access, VkPipelineStageFlags src_stage,
                          VkPipelineStageFlags dst_stage) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  b.oldLayout = old_layout;
  b.newLayout = new_layout;
  b.srcQueueFamilyIndex = src_family;
  b.dstQueueFamilyIndex = dst_family;
  b.image = image.image;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  device.fn().vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, nullptr, 0, nullptr, 1, &b);
}

}  // namespace extmem::vk
