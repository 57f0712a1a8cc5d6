#include "vulkan/context.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "extmem/os/library.h"

namespace extmem::vk {
namespace {
std::atomic<long> g_live_buffers{0};
std::atomic<long> g_live_memories{0};
}  // namespace

LiveObjects live_objects() { return {g_live_buffers.load(), g_live_memories.load()}; }

Result<std::shared_ptr<Instance>> Instance::create() {
  auto lib = open_loader();
  if (!lib) return std::move(lib).error();
  auto inst = std::shared_ptr<Instance>(new Instance());
  inst->lib_ = *lib;
  if (inst->lib_->enumerate_instance_version != nullptr)
    inst->lib_->enumerate_instance_version(&inst->loader_version_);
  if (inst->loader_version_ < VK_API_VERSION_1_1)
    return Error{"vkEnumerateInstanceVersion", ErrorKind::unsupported, "VK_API_VERSION_1_0",
                 "external memory needs a Vulkan 1.1 loader"};

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "extmem";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkResult r = inst->lib_->create_instance(&ci, nullptr, &inst->instance_);
  if (r != VK_SUCCESS) return vk_error("vkCreateInstance", r);
#define EXTMEM_LOAD(name) \
  inst->fn_.name = reinterpret_cast<PFN_##name>(inst->lib_->get_instance_proc_addr(inst->instance_, #name));
  EXTMEM_VK_INSTANCE_FUNCS(EXTMEM_LOAD)
#undef EXTMEM_LOAD
  return inst;
}

Instance::~Instance() {
  os::pin_loaded_libraries();  // sanitizer builds only: keep the ICD mapped for leak reports
  if (instance_ != VK_NULL_HANDLE && fn_.vkDestroyInstance != nullptr) fn_.vkDestroyInstance(instance_, nullptr);
}

Result<std::vector<VkPhysicalDevice>> Instance::physical_devices() const {
  std::uint32_t n = 0;
  VkResult r = fn_.vkEnumeratePhysicalDevices(instance_, &n, nullptr);
  if (r != VK_SUCCESS) return vk_error("vkEnumeratePhysicalDevices", r);
  std::vector<VkPhysicalDevice> out(n);
  r = fn_.vkEnumeratePhysicalDevices(instance_, &n, out.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_error("vkEnumeratePhysicalDevices", r);
  out.resize(n);
  return out;
}

std::vector<std::string> Instance::device_extensions(VkPhysicalDevice pd) const {
  std::uint32_t n = 0;
  fn_.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> props(n);
  fn_.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, props.data());
  std::vector<std::string> out;
  for (std::uint32_t i = 0; i < n; ++i) out.emplace_back(props[i].extensionName);
  return out;
}

VkExternalMemoryProperties Instance::external_buffer_properties(VkPhysicalDevice pd,
                                                                VkExternalMemoryHandleTypeFlagBits type) const {
  VkPhysicalDeviceExternalBufferInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO};
  info.usage = kRouteBufferUsage;
  info.handleType = type;
  VkExternalBufferProperties props{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
  fn_.vkGetPhysicalDeviceExternalBufferProperties(pd, &info, &props);
  return props.externalMemoryProperties;
}

Buffer::Buffer(Buffer&& o) noexcept { *this = std::move(o); }

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    buffer = std::exchange(o.buffer, VK_NULL_HANDLE);
    memory = std::exchange(o.memory, VK_NULL_HANDLE);
    size = o.size;
    allocation_size = o.allocation_size;
    memory_type_index = o.memory_type_index;
    dedicated = o.dedicated;
    mapped = std::exchange(o.mapped, nullptr);
    device_ = std::exchange(o.device_, nullptr);
  }
  return *this;
}

Buffer::~Buffer() { reset(); }

void Buffer::reset() noexcept {
  if (device_ == nullptr) return;
  const DeviceFns& f = device_->fn();
  if (mapped != nullptr) f.vkUnmapMemory(device_->handle(), memory);
  if (buffer != VK_NULL_HANDLE) {
    f.vkDestroyBuffer(device_->handle(), buffer, nullptr);
    --g_live_buffers;
  }
  if (memory != VK_NULL_HANDLE) {
    f.vkFreeMemory(device_->handle(), memory, nullptr);
    --g_live_memories;
  }
  buffer = VK_NULL_HANDLE;
  memory = VK_NULL_HANDLE;
  mapped = nullptr;
  device_ = nullptr;
}

namespace {

struct QueueFamily {
  std::uint32_t index = 0;
  std::uint32_t timestamp_valid_bits = 0;
};

// The first queue family that can transfer (graphics and compute queues
// support transfer implicitly); nullopt when none can.
std::optional<QueueFamily> transfer_queue_family(const InstanceFns& f, VkPhysicalDevice pd) {
  std::uint32_t nq = 0;
  f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf.data());
  for (std::uint32_t i = 0; i < nq; ++i)
    if (qf[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT))
      return QueueFamily{i, qf[i].timestampValidBits};
  return std::nullopt;
}

// minImportedHostPointerAlignment (VK_EXT_external_memory_host).
VkDeviceSize host_pointer_alignment(const InstanceFns& f, VkPhysicalDevice pd) {
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &host;
  f.vkGetPhysicalDeviceProperties2(pd, &p2);
  return host.minImportedHostPointerAlignment;
}

// The device's PCI address (VK_EXT_pci_bus_info).
PciAddress read_pci_address(const InstanceFns& f, VkPhysicalDevice pd) {
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &pci;
  f.vkGetPhysicalDeviceProperties2(pd, &p2);
  return PciAddress{pci.pciDomain, pci.pciBus, pci.pciDevice, pci.pciFunction};
}

}  // namespace

Result<std::unique_ptr<Device>> Device::create(std::shared_ptr<Instance> instance, std::uint32_t index,
                                               const std::vector<std::string>& wanted, const void* features) {
  auto pds = instance->physical_devices();
  if (!pds) return std::move(pds).error();
  if (index >= pds->size())
    return Error{"select physical device", ErrorKind::invalid_argument, {},
                 fmt::format("index {} but {} devices", index, pds->size())};
  std::unique_ptr<Device> dev(new Device());
  dev->instance_ = instance;
  dev->pd_ = (*pds)[index];
  const InstanceFns& f = instance->fn();

  VkPhysicalDeviceProperties props{};
  f.vkGetPhysicalDeviceProperties(dev->pd_, &props);
  if (props.apiVersion < VK_API_VERSION_1_1)
    return Error{"vkGetPhysicalDeviceProperties", ErrorKind::unsupported, "apiVersion 1.0",
                 "external memory needs a Vulkan 1.1 device"};
  f.vkGetPhysicalDeviceMemoryProperties(dev->pd_, &dev->mem_);
  dev->timestamp_period_ = props.limits.timestampPeriod;

  auto queue = transfer_queue_family(f, dev->pd_);
  if (!queue) return Error{"find transfer queue", ErrorKind::unsupported, {}, "no queue family supports transfer"};
  dev->queue_family_ = queue->index;
  dev->timestamp_valid_bits_ = queue->timestamp_valid_bits;

  std::vector<std::string> available = instance->device_extensions(dev->pd_);
  for (const std::string& w : wanted) {
    if (std::find(available.begin(), available.end(), w) != available.end()) dev->enabled_.push_back(w);
  }
  std::vector<const char*> enable;
  for (const std::string& e : dev->enabled_) enable.push_back(e.c_str());

  if (dev->has(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME))
    dev->host_ptr_alignment_ = host_pointer_alignment(f, dev->pd_);
  if (std::find(available.begin(), available.end(), VK_EXT_PCI_BUS_INFO_EXTENSION_NAME) != available.end())
    dev->pci_ = read_pci_address(f, dev->pd_);

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = dev->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  // A device exposing VK_KHR_timeline_semaphore must support its feature, so a
  // caller that chains no features of its own gets it enabled with the extension
  // (the S1 routes wait on and signal timeline semaphores on the kept device).
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  timeline.timelineSemaphore = VK_TRUE;
  if (features == nullptr && dev->has(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME)) features = &timeline;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = features;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<std::uint32_t>(enable.size());
  dci.ppEnabledExtensionNames = enable.data();
  VkResult r = f.vkCreateDevice(dev->pd_, &dci, nullptr, &dev->device_);
  if (r != VK_SUCCESS) return vk_error("vkCreateDevice", r);
#define EXTMEM_LOAD(name) \
  dev->fn_.name = reinterpret_cast<PFN_##name>(f.vkGetDeviceProcAddr(dev->device_, #name));
  EXTMEM_VK_DEVICE_FUNCS(EXTMEM_LOAD)
  EXTMEM_VK_DEVICE_EXT_FUNCS(EXTMEM_LOAD)
#undef EXTMEM_LOAD
  dev->fn_.vkGetDeviceQueue(dev->device_, dev->queue_family_, 0, &dev->queue_);

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = dev->queue_family_;
  r = dev->fn_.vkCreateCommandPool(dev->device_, &pci, nullptr, &dev->pool_);
  if (r != VK_SUCCESS) return vk_error("vkCreateCommandPool", r);
  return dev;
}

Device::~Device() {
  if (device_ == VK_NULL_HANDLE) return;
  if (pool_ != VK_NULL_HANDLE) fn_.vkDestroyCommandPool(device_, pool_, nullptr);
  fn_.vkDestroyDevice(device_, nullptr);
}

bool Device::has(const std::string& extension) const {
  return std::find(enabled_.begin(), enabled_.end(), extension) != enabled_.end();
}

std::string Device::device_uuid() const {
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &id;
  instance_->fn().vkGetPhysicalDeviceProperties2(pd_, &p2);
  std::string out;
  for (std::uint8_t b : id.deviceUUID) out += fmt::format("{:02x}", b);
  return out;
}

int Device::find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags flags) const {
  for (std::uint32_t i = 0; i < mem_.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & flags) == flags) return static_cast<int>(i);
  }
  return -1;
}

VkResult allocate_memory(const Device& device, const MemoryChain& c, VkDeviceSize size, std::uint32_t type,
                         VkDeviceMemory* memory) {
  const void* chain = nullptr;
  VkMemoryDedicatedAllocateInfo ded{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
  ded.image = c.image;
  ded.buffer = c.buffer;
  VkExportMemoryAllocateInfo exp{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO};
  exp.handleTypes = c.export_types;
  VkImportMemoryFdInfoKHR imp{VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR};
  imp.handleType = c.import_fd_type;
  imp.fd = c.import_fd;
  VkImportMemoryHostPointerInfoEXT host{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  host.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  host.pHostPointer = c.import_host_pointer;
  if (c.dedicated) {
    ded.pNext = chain;
    chain = &ded;
  }
  if (c.export_memory) {
    exp.pNext = chain;
    chain = &exp;
  }
  if (c.import_fd >= 0) {
    imp.pNext = chain;
    chain = &imp;
  }
  if (c.import_host_pointer != nullptr) {
    host.pNext = chain;
    chain = &host;
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = chain;
  ai.allocationSize = size;
  ai.memoryTypeIndex = type;
  return device.fn().vkAllocateMemory(device.handle(), &ai, nullptr, memory);
}

namespace {

// vkCreateBuffer of the request's size for the routes' uses, exportable as it asks.
VkResult create_vk_buffer(const Device& device, const AllocationRequest& req, VkBuffer* buffer) {
  VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  ext.handleTypes = req.external_handle_types;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = req.external_handle_types != 0 ? &ext : nullptr;
  bci.size = req.size;
  bci.usage = kRouteBufferUsage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  return device.fn().vkCreateBuffer(device.handle(), &bci, nullptr, buffer);
}

}  // namespace

Result<Buffer> Device::create_buffer(const AllocationRequest& req, AllocationFailure* failure) const {
  Buffer out;
  out.device_ = this;
  auto fail = [&](Error e, bool at_allocate) -> Result<Buffer> {
    if (failure != nullptr) *failure = AllocationFailure{e, at_allocate, out.memory != VK_NULL_HANDLE};
    return e;
  };
  out.size = req.size;

  VkResult r = create_vk_buffer(*this, req, &out.buffer);
  if (r != VK_SUCCESS) return fail(vk_error("vkCreateBuffer", r), false);
  ++g_live_buffers;

  VkMemoryDedicatedRequirements dreq{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS};
  VkMemoryRequirements2 mreq{VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
  mreq.pNext = &dreq;
  VkBufferMemoryRequirementsInfo2 rinfo{VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2};
  rinfo.buffer = out.buffer;
  fn_.vkGetBufferMemoryRequirements2(device_, &rinfo, &mreq);

  std::uint32_t bits = mreq.memoryRequirements.memoryTypeBits & req.allowed_type_bits;
  int type = req.memory_type_index >= 0 ? req.memory_type_index : find_memory_type(bits, req.required_flags);
  if (type < 0)
    return fail(Error{"choose memory type", ErrorKind::unsupported, {},
                      fmt::format("no memory type in bits 0x{:x} (the buffer's memoryTypeBits 0x{:x} & allowed 0x{:x}) has flags 0x{:x}",
                                  bits, mreq.memoryRequirements.memoryTypeBits, req.allowed_type_bits,
                                  req.required_flags)},
                false);
  out.memory_type_index = static_cast<std::uint32_t>(type);
  out.allocation_size = req.allocation_size != 0 ? req.allocation_size : mreq.memoryRequirements.size;
  out.dedicated = req.dedicated >= 0 ? req.dedicated == 1
                                     : (dreq.requiresDedicatedAllocation || dreq.prefersDedicatedAllocation);

  MemoryChain chain = requested_chain(req, out.dedicated);
  chain.buffer = out.buffer;
  chain.import_host_pointer = req.import_host_pointer;
  r = allocate_memory(*this, chain, out.allocation_size, out.memory_type_index, &out.memory);
  if (r == VK_SUCCESS) ++g_live_memories;
  if (r != VK_SUCCESS) {
    out.memory = VK_NULL_HANDLE;
    return fail(vk_error("vkAllocateMemory", r,
                         fmt::format("{} bytes, memory type {}{}", out.allocation_size, out.memory_type_index,
                                     out.dedicated ? ", dedicated" : "")),
                true);
  }
  r = fn_.vkBindBufferMemory(device_, out.buffer, out.memory, 0);
  if (r != VK_SUCCESS) return fail(vk_error("vkBindBufferMemory", r), false);
  if (req.map) {
    void* p = nullptr;
    r = fn_.vkMapMemory(device_, out.memory, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS) return fail(vk_error("vkMapMemory", r), false);
    out.mapped = static_cast<std::byte*>(p);
  }
  return out;
}

Status Device::submit_and_wait(const std::function<void(VkCommandBuffer)>& record, std::uint64_t timeout_ns) const {
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkResult r = fn_.vkAllocateCommandBuffers(device_, &cai, &cmd);
  if (r != VK_SUCCESS) return vk_error("vkAllocateCommandBuffers", r);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  r = fn_.vkBeginCommandBuffer(cmd, &bi);
  if (r != VK_SUCCESS) return vk_error("vkBeginCommandBuffer", r);
  record(cmd);
  r = fn_.vkEndCommandBuffer(cmd);
  if (r != VK_SUCCESS) return vk_error("vkEndCommandBuffer", r);

  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  r = fn_.vkCreateFence(device_, &fci, nullptr, &fence);
  if (r != VK_SUCCESS) return vk_error("vkCreateFence", r);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  r = fn_.vkQueueSubmit(queue_, 1, &si, fence);
  Status status;
  if (r != VK_SUCCESS) {
    status = vk_error("vkQueueSubmit", r);
  } else {
    r = fn_.vkWaitForFences(device_, 1, &fence, VK_TRUE, timeout_ns);
    if (r != VK_SUCCESS) status = vk_error("vkWaitForFences", r);
  }
  fn_.vkDestroyFence(device_, fence, nullptr);
  return status;
}

}  // namespace extmem::vk
