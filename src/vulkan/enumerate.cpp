#include "extmem/vulkan/enumerate.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "vulkan/context.h"
#include "vulkan/image.h"

namespace extmem::vk {
namespace {

std::string version_string(std::uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

std::string hex(const std::uint8_t* bytes, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", bytes[i]);
  return out;
}

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "INTEGRATED_GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "DISCRETE_GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "VIRTUAL_GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "OTHER";
  }
}

std::string join_flags(std::uint32_t flags, std::initializer_list<std::pair<std::uint32_t, const char*>> names) {
  std::string out;
  for (auto [bit, name] : names) {
    if (flags & bit) {
      out += out.empty() ? "" : "|";
      out += name;
      flags &= ~bit;
    }
  }
  if (flags != 0) out += fmt::format("{}0x{:x}", out.empty() ? "" : "|", flags);
  return out;
}

// The extensions a route depends on; printed present/absent in phase A.
constexpr const char* kRouteExtensions[] = {
    "VK_KHR_external_memory_fd",       "VK_EXT_external_memory_dma_buf",
    "VK_EXT_external_memory_host",     "VK_KHR_dedicated_allocation",
    "VK_KHR_external_semaphore_fd",    "VK_KHR_timeline_semaphore",
    "VK_EXT_image_drm_format_modifier", "VK_ANDROID_external_memory_android_hardware_buffer",
};

constexpr std::pair<const char*, VkExternalMemoryHandleTypeFlagBits> kHandleTypes[] = {
    {"OPAQUE_FD", VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT},
    {"DMA_BUF", VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT},
    {"HOST_ALLOCATION", VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT},
    {"AHARDWAREBUFFER", VK_EXTERNAL_MEMORY_HANDLE_TYPE_ANDROID_HARDWARE_BUFFER_BIT_ANDROID},
};

// The handle types the image rows export and import (HOST_ALLOCATION and
// AHARDWAREBUFFER are not queried for images: no image row uses them here).
constexpr std::pair<const char*, VkExternalMemoryHandleTypeFlagBits> kImageHandleTypes[] = {
    {"OPAQUE_FD", VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT},
    {"DMA_BUF", VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT},
};

}  // namespace

std::vector<DrmModifierInfo> drm_modifiers(const Instance& inst, VkPhysicalDevice pd) {
  VkDrmFormatModifierPropertiesListEXT list{VK_STRUCTURE_TYPE_DRM_FORMAT_MODIFIER_PROPERTIES_LIST_EXT};
  VkFormatProperties2 fp{VK_STRUCTURE_TYPE_FORMAT_PROPERTIES_2};
  fp.pNext = &list;
  inst.fn().vkGetPhysicalDeviceFormatProperties2(pd, kRouteImageFormat, &fp);  // first call: the count
  std::vector<VkDrmFormatModifierPropertiesEXT> mods(list.drmFormatModifierCount);
  list.pDrmFormatModifierProperties = mods.data();
  inst.fn().vkGetPhysicalDeviceFormatProperties2(pd, kRouteImageFormat, &fp);
  mods.resize(list.drmFormatModifierCount);
  std::vector<DrmModifierInfo> out;
  for (const VkDrmFormatModifierPropertiesEXT& m : mods) {
    DrmModifierInfo d;
    d.modifier = m.drmFormatModifier;
    d.plane_count = m.drmFormatModifierPlaneCount;
    d.tiling_features = m.drmFormatModifierTilingFeatures;
    ImageShape shape;
    shape.tiling = VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT;
    ExternalImageSupport s = external_image_support(inst, pd, shape, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
                                                    static_cast<std::int64_t>(m.drmFormatModifier));
    d.dma_buf_result = result_name(s.result);
    d.dma_buf_result_code = s.result;
    d.dma_buf_exportable = s.exportable();
    d.dma_buf_importable = s.importable();
    out.push_back(d);
  }
  return out;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string memory_property_names(std::uint32_t flags) {
  return join_flags(flags, {{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "DEVICE_LOCAL"},
                            {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "HOST_VISIBLE"},
                            {VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "HOST_COHERENT"},
                            {VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "HOST_CACHED"},
                            {VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT, "LAZILY_ALLOCATED"},
                            {VK_MEMORY_PROPERTY_PROTECTED_BIT, "PROTECTED"},
                            {VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD, "DEVICE_COHERENT_AMD"},
                            {VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD, "DEVICE_UNCACHED_AMD"}});
}

Result<VulkanEnumeration> enumerate() {
  auto instance = Instance::create();
  if (!instance) return std::move(instance).error();
  return enumerate(**instance);
}

namespace {

bool listed(const std::vector<std::string>& exts, const char* e) {
  return std::find(exts.begin(), exts.end(), e) != exts.end();
}

// The device's properties (names, versions, UUIDs, the host-pointer
// alignment); returns the core properties, which the later queries depend on.
VkPhysicalDeviceProperties describe_properties(const InstanceFns& f, VkPhysicalDevice pd,
                                               const std::vector<std::string>& exts, DeviceInfo& d) {
  VkPhysicalDeviceProperties base{};
  f.vkGetPhysicalDeviceProperties(pd, &base);
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  // Chain only structures the device knows, or the driver may read garbage.
  void* chain = nullptr;
  if (base.apiVersion >= VK_API_VERSION_1_1) {
    id.pNext = chain;
    chain = &id;
  }
  if (base.apiVersion >= VK_API_VERSION_1_2 || listed(exts, "VK_KHR_driver_properties")) {
    drv.pNext = chain;
    chain = &drv;
  }
  if (listed(exts, "VK_EXT_external_memory_host")) {
    host.pNext = chain;
    chain = &host;
  }
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = chain;
  f.vkGetPhysicalDeviceProperties2(pd, &p2);

  d.name = base.deviceName;
  d.vendor_id = base.vendorID;
  d.device_id = base.deviceID;
  d.device_type = device_type_name(base.deviceType);
  d.api_version = version_string(base.apiVersion);
  d.driver_version = base.driverVersion;
  d.driver_name = drv.driverName;
  d.driver_info = drv.driverInfo;
  d.device_uuid = hex(id.deviceUUID, VK_UUID_SIZE);
  d.driver_uuid = hex(id.driverUUID, VK_UUID_SIZE);
  d.min_imported_host_pointer_alignment = host.minImportedHostPointerAlignment;
  d.max_image_dimension_2d = base.limits.maxImageDimension2D;
  return base;
}

void describe_memory(const InstanceFns& f, VkPhysicalDevice pd, DeviceInfo& d) {
  VkPhysicalDeviceMemoryProperties mem{};
  f.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (std::uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
    d.heaps.push_back({mem.memoryHeaps[h].size, mem.memoryHeaps[h].flags,
                       join_flags(mem.memoryHeaps[h].flags, {{VK_MEMORY_HEAP_DEVICE_LOCAL_BIT, "DEVICE_LOCAL"},
                                                             {VK_MEMORY_HEAP_MULTI_INSTANCE_BIT, "MULTI_INSTANCE"}})});
  }
  for (std::uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
    d.types.push_back({t, mem.memoryTypes[t].heapIndex, mem.memoryTypes[t].propertyFlags,
                       memory_property_names(mem.memoryTypes[t].propertyFlags)});
  }
}

// Each handle type's buffer export/import support (queried from Vulkan 1.1).
void describe_external_buffers(const Instance& inst, VkPhysicalDevice pd, std::uint32_t api, DeviceInfo& d) {
  for (auto [name, bit] : kHandleTypes) {
    ExternalBufferInfo x;
    x.handle_type = name;
    x.handle_type_bit = bit;
    if (api >= VK_API_VERSION_1_1) {
      VkExternalMemoryProperties p = inst.external_buffer_properties(pd, bit);
      x.features = p.externalMemoryFeatures;
      x.exportable = p.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT;
      x.importable = p.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT;
      x.dedicated_only = p.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT;
      x.export_from = p.exportFromImportedHandleTypes;
      x.compatible = p.compatibleHandleTypes;
    }
    d.external_buffers.push_back(x);
  }
}

// Each handle type's export/import support for binary and timeline semaphores.
void describe_external_semaphores(const InstanceFns& f, VkPhysicalDevice pd, std::uint32_t api,
                                  const std::vector<std::string>& exts, DeviceInfo& d) {
  for (auto [name, bit] : {std::pair{"OPAQUE_FD", VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT},
                           std::pair{"SYNC_FD", VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT}}) {
    for (VkSemaphoreType type : {VK_SEMAPHORE_TYPE_BINARY, VK_SEMAPHORE_TYPE_TIMELINE}) {
      ExternalSemaphoreInfo x;
      x.handle_type = name;
      x.semaphore_type = type == VK_SEMAPHORE_TYPE_TIMELINE ? "timeline" : "binary";
      const bool timeline = type == VK_SEMAPHORE_TYPE_TIMELINE;
      // Chaining the timeline type is only valid where the device knows it.
      x.queried = api >= VK_API_VERSION_1_1 && f.vkGetPhysicalDeviceExternalSemaphoreProperties != nullptr &&
                  (!timeline || listed(exts, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME));
      if (x.queried) {
        VkSemaphoreTypeCreateInfo t{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
        t.semaphoreType = type;
        VkPhysicalDeviceExternalSemaphoreInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO};
        info.pNext = timeline ? &t : nullptr;
        info.handleType = bit;
        VkExternalSemaphoreProperties p{VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
        f.vkGetPhysicalDeviceExternalSemaphoreProperties(pd, &info, &p);
        x.features = p.externalSemaphoreFeatures;
        x.exportable = p.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT;
        x.importable = p.externalSemaphoreFeatures & VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;
        x.export_from = p.exportFromImportedHandleTypes;
        x.compatible = p.compatibleHandleTypes;
      }
      d.external_semaphores.push_back(x);
    }
  }
}

// The image rows' handle types with each tiling (Vulkan 1.1 devices only).
void describe_external_images(const Instance& inst, VkPhysicalDevice pd, DeviceInfo& d) {
  for (VkImageTiling tiling : {VK_IMAGE_TILING_OPTIMAL, VK_IMAGE_TILING_LINEAR}) {
    for (auto [name, bit] : kImageHandleTypes) {
      ImageShape shape;
      shape.tiling = tiling;
      ExternalImageSupport s = external_image_support(inst, pd, shape, bit);
      ExternalImageInfo x;
      x.handle_type = name;
      x.tiling = tiling_name(tiling);
      x.result = result_name(s.result);
      x.result_code = s.result;
      x.features = s.external.externalMemoryFeatures;
      x.exportable = s.exportable();
      x.importable = s.importable();
      x.dedicated_only = s.dedicated_only();
      x.export_from = s.external.exportFromImportedHandleTypes;
      x.compatible = s.external.compatibleHandleTypes;
      x.max_width = s.limits.maxExtent.width;
      x.max_height = s.limits.maxExtent.height;
      x.max_mip_levels = s.limits.maxMipLevels;
      x.max_array_layers = s.limits.maxArrayLayers;
      d.external_images.push_back(x);
    }
  }
}

}  // namespace

Result<VulkanEnumeration> enumerate(const Instance& inst) {
  const InstanceFns& f = inst.fn();
  auto pds = inst.physical_devices();
  if (!pds) return std::move(pds).error();

  VulkanEnumeration out;
  out.loader_version = version_string(inst.loader_version());
  for (std::uint32_t i = 0; i < pds->size(); ++i) {
    VkPhysicalDevice pd = (*pds)[i];
    DeviceInfo d;
    d.index = i;
    const std::vector<std::string> exts = inst.device_extensions(pd);
    const std::uint32_t api = describe_properties(f, pd, exts, d).apiVersion;
    describe_memory(f, pd, d);
    for (const char* e : kRouteExtensions) d.extensions.emplace_back(e, listed(exts, e));
    std::sort(d.extensions.begin(), d.extensions.end());  // by name, as phase A's JSON object keeps them
    describe_external_buffers(inst, pd, api, d);
    describe_external_semaphores(f, pd, api, exts, d);
    if (api >= VK_API_VERSION_1_1) {
      describe_external_images(inst, pd, d);
      if (listed(exts, "VK_EXT_image_drm_format_modifier")) d.drm_modifiers = drm_modifiers(inst, pd);
    }
    out.devices.push_back(std::move(d));
  }
  return out;
}

Result<std::uint32_t> select_device(const std::vector<DeviceInfo>& devices, const std::string& spec) {
  auto listing = [&] {
    std::string s;
    for (const DeviceInfo& d : devices) s += fmt::format("\n  {}: {} (uuid {})", d.index, d.name, d.device_uuid);
    return s;
  };
  auto invalid = [&](std::string why) {
    return Error{"--device", ErrorKind::invalid_argument, {},
                 why + "; accepted: INDEX, deviceUUID (32 hex digits) or a unique NAME-SUBSTRING. Devices:" + listing()};
  };
  if (devices.empty()) return Error{"select device", ErrorKind::unsupported, {}, "the Vulkan loader reports no physical device"};
  if (spec.empty()) {
    for (const DeviceInfo& d : devices)
      if (d.device_type != "CPU") return d.index;
    return 0u;
  }
  if (std::all_of(spec.begin(), spec.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (spec.size() > 6 || std::stoul(spec) >= devices.size())
      return invalid(fmt::format("no device with index {}", spec));
    return static_cast<std::uint32_t>(std::stoul(spec));
  }
  std::string compact;
  for (char c : spec)
    if (c != '-') compact += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (compact.size() == 32 && std::all_of(compact.begin(), compact.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
    for (const DeviceInfo& d : devices)
      if (d.device_uuid == compact) return d.index;
    return invalid(fmt::format("no device with deviceUUID {}", compact));
  }
  std::vector<std::uint32_t> hits;
  for (const DeviceInfo& d : devices)
    if (lower(d.name).find(lower(spec)) != std::string::npos) hits.push_back(d.index);
  if (hits.size() == 1) return hits.front();
  if (hits.empty()) return invalid(fmt::format("no device name contains \"{}\"", spec));
  return invalid(fmt::format("\"{}\" matches {} devices", spec, hits.size()));
}

}  // namespace extmem::vk
