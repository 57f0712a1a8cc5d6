// A Vulkan instance and one logical device with a transfer-capable queue.
#pragma once

#include "extmem/vulkan/enumerate.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vulkan/dispatch.h"

namespace extmem::vk {

/// Buffer usage every route's buffers are created with (docs/probe.md, "Phase A").
inline constexpr VkBufferUsageFlags kRouteBufferUsage =
    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
    VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;

/// Owns a VkInstance (API 1.1 or newer) and the loader it came from.
class Instance {
 public:
  /// Creates the instance. Errors: open_loader()'s; unsupported when the loader
  /// only offers Vulkan 1.0; vk_error("vkCreateInstance").
  static Result<std::shared_ptr<Instance>> create();
  ~Instance();

  VkInstance handle() const noexcept { return instance_; }
  const InstanceFns& fn() const noexcept { return fn_; }
  std::uint32_t loader_version() const noexcept { return loader_version_; }
  /// Physical devices in the driver's order. Errors: vk_error("vkEnumeratePhysicalDevices").
  Result<std::vector<VkPhysicalDevice>> physical_devices() const;
  /// Extension names the physical device exposes.
  std::vector<std::string> device_extensions(VkPhysicalDevice pd) const;
  /// vkGetPhysicalDeviceExternalBufferProperties for kRouteBufferUsage.
  VkExternalMemoryProperties external_buffer_properties(VkPhysicalDevice pd,
                                                        VkExternalMemoryHandleTypeFlagBits type) const;

 private:
  std::shared_ptr<LoaderLibrary> lib_;
  VkInstance instance_ = VK_NULL_HANDLE;
  InstanceFns fn_{};
  std::uint32_t loader_version_ = VK_API_VERSION_1_0;
};

/// Phase A's enumeration (extmem/vulkan/enumerate.h) on an instance the caller
/// keeps, so a process that goes on to use the driver creates one instance, not two.
Result<VulkanEnumeration> enumerate(const Instance& instance);

class Device;

/// A VkBuffer bound to its own VkDeviceMemory, optionally mapped. Move-only; frees on destruction.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;              ///< buffer size in bytes
  VkDeviceSize allocation_size = 0;   ///< bytes allocated (>= size)
  std::uint32_t memory_type_index = 0;
  bool dedicated = false;             ///< allocated with VkMemoryDedicatedAllocateInfo
  std::byte* mapped = nullptr;        ///< host pointer from vkMapMemory, or null

 private:
  friend class Device;
  const Device* device_ = nullptr;
  void reset() noexcept;
};

/// How to allocate a buffer's memory (the pNext chain pieces the routes vary).
/// A PCI function's address (VkPhysicalDevicePCIBusInfoPropertiesEXT, VK_EXT_pci_bus_info).
struct PciAddress {
  std::uint32_t domain = 0, bus = 0, device = 0, function = 0;
};

struct AllocationRequest {
  VkDeviceSize size = 0;                                ///< buffer size, bytes
  VkExternalMemoryHandleTypeFlags external_handle_types = 0;  ///< VkExternalMemoryBufferCreateInfo
  bool export_memory = false;                           ///< chain VkExportMemoryAllocateInfo
  int import_fd = -1;              ///< chain VkImportMemoryFdInfoKHR; consumed by the driver on success only
  VkExternalMemoryHandleTypeFlagBits import_fd_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  void* import_host_pointer = nullptr;                  ///< chain VkImportMemoryHostPointerInfoEXT
  VkDeviceSize allocation_size = 0;                     ///< 0: from vkGetBufferMemoryRequirements2
  int memory_type_index = -1;                           ///< -1: pick by required_flags
  std::uint32_t allowed_type_bits = ~0u;                ///< further restricts the memory type
  VkMemoryPropertyFlags required_flags = 0;
  int dedicated = -1;                                   ///< 1/0 force; -1 when required or preferred
  bool map = true;
};

/// Which pieces of an allocation failed, so routes can apply UNSUPPORTED-vs-FAIL.
struct AllocationFailure {
  Error error;
  bool at_allocate = false;       ///< vkAllocateMemory itself declined (the export/import site)
  bool memory_allocated = false;  ///< vkAllocateMemory succeeded (an imported fd now belongs to the driver)
};

/// Buffers and device memories created through Device::create_buffer and not yet
/// released, in this process (the probe worker's per-route hygiene check).
struct LiveObjects {
  long buffers = 0;
  long memories = 0;
};
LiveObjects live_objects();

/// The pNext chain of a vkAllocateMemory, as buffers and images build it.
struct MemoryChain {
  bool dedicated = false;            ///< chain VkMemoryDedicatedAllocateInfo of `image` or `buffer`
  VkImage image = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  bool export_memory = false;        ///< chain VkExportMemoryAllocateInfo with `export_types`
  VkExternalMemoryHandleTypeFlags export_types = 0;
  int import_fd = -1;                ///< chain VkImportMemoryFdInfoKHR when >= 0
  VkExternalMemoryHandleTypeFlagBits import_fd_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  void* import_host_pointer = nullptr;  ///< chain VkImportMemoryHostPointerInfoEXT when set
};

/// The chain a buffer's or an image's request asks for (its export and fd
/// import fields), dedicated or not; the caller names what it is dedicated to.
template <class Request>
MemoryChain requested_chain(const Request& req, bool dedicated) {
  MemoryChain c;
  c.dedicated = dedicated;
  c.export_memory = req.export_memory;
  c.export_types = req.external_handle_types;
  c.import_fd = req.import_fd;
  c.import_fd_type = req.import_fd_type;
  return c;
}

/// vkAllocateMemory of `size` bytes of memory type `type` with `chain`.
VkResult allocate_memory(const Device& device, const MemoryChain& chain, VkDeviceSize size, std::uint32_t type,
                         VkDeviceMemory* memory);

class Device {
 public:
  /// Creates a logical device on physical device `index` with one queue that
  /// supports transfer. `wanted` extensions are enabled when present (see has()).
  /// `features` (may be null) is chained into VkDeviceCreateInfo::pNext as is:
  /// feature structs of extensions the caller knows are in `wanted` and present.
  /// With `features` null and VK_KHR_timeline_semaphore enabled, its
  /// timelineSemaphore feature is enabled too (the extension requires it supported).
  /// Errors: invalid_argument (no such index), unsupported (device older than
  /// Vulkan 1.1, no transfer queue), vk_error("vkCreateDevice").
  static Result<std::unique_ptr<Device>> create(std::shared_ptr<Instance> instance, std::uint32_t index,
                                                const std::vector<std::string>& wanted,
                                                const void* features = nullptr);
  ~Device();

  bool has(const std::string& extension) const;
  const DeviceFns& fn() const noexcept { return fn_; }
  VkDevice handle() const noexcept { return device_; }
  VkPhysicalDevice physical() const noexcept { return pd_; }
  const Instance& instance() const noexcept { return *instance_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const noexcept { return mem_; }
  /// The device's one queue (owned by the device) and its family index.
  VkQueue queue() const noexcept { return queue_; }
  std::uint32_t queue_family() const noexcept { return queue_family_; }
  /// VkPhysicalDeviceExternalMemoryHostPropertiesEXT::minImportedHostPointerAlignment, bytes (0 if not exposed).
  VkDeviceSize min_imported_host_pointer_alignment() const noexcept { return host_ptr_alignment_; }
  /// VkPhysicalDeviceLimits::timestampPeriod: nanoseconds per timestamp tick.
  float timestamp_period() const noexcept { return timestamp_period_; }
  /// VkQueueFamilyProperties::timestampValidBits of queue_family(): 0 means the
  /// queue family has no timestamps, else 36..64 meaningful low bits.
  std::uint32_t timestamp_valid_bits() const noexcept { return timestamp_valid_bits_; }
  /// The device's PCI address when the physical device exposes VK_EXT_pci_bus_info
  /// (queried, not enabled: a properties query needs only the extension's support); nullopt otherwise.
  std::optional<PciAddress> pci_address() const noexcept { return pci_; }

  /// VkPhysicalDeviceIDProperties::deviceUUID as 32 lower-case hex digits.
  std::string device_uuid() const;

  /// First memory type in `type_bits` with all of `flags`; -1 when none.
  int find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags flags) const;

  /// Creates, allocates, binds and (optionally) maps a buffer per `req`.
  Result<Buffer> create_buffer(const AllocationRequest& req, AllocationFailure* failure = nullptr) const;

  /// Records commands with `record`, submits them on the queue, waits for the
  /// fence (at most `timeout_ns`). Errors: vk_error of the failing call.
  Status submit_and_wait(const std::function<void(VkCommandBuffer)>& record,
                         std::uint64_t timeout_ns = 10'000'000'000ull) const;

 private:
  Device() = default;
  std::shared_ptr<Instance> instance_;
  VkPhysicalDevice pd_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  DeviceFns fn_{};
  VkPhysicalDeviceMemoryProperties mem_{};
  VkDeviceSize host_ptr_alignment_ = 0;
  float timestamp_period_ = 0;
  std::uint32_t timestamp_valid_bits_ = 0;
  std::optional<PciAddress> pci_;
  std::vector<std::string> enabled_;
};

}  // namespace extmem::vk
