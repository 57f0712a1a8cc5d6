#include "probe/routes/vk/sync.h"

#include <fmt/format.h>

namespace extmem::probe::vksync {

std::string Advertised::text() const {
  return fmt::format("externalSemaphoreFeatures=0x{:x} compatible=0x{:x} exportFrom=0x{:x}", features, compatible,
                     export_from);
}

Advertised advertised(const vk::Device& device, const SemaphoreKind& kind) {
  const auto& f = device.instance().fn();
  Advertised a;
  if (f.vkGetPhysicalDeviceExternalSemaphoreProperties == nullptr) return a;
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = kind.type;
  VkPhysicalDeviceExternalSemaphoreInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO};
  // Chained only for a timeline: a binary query is the 1.1 query as every driver knows it.
  info.pNext = kind.type == VK_SEMAPHORE_TYPE_TIMELINE ? &type : nullptr;
  info.handleType = kind.bit;
  VkExternalSemaphoreProperties props{VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
  f.vkGetPhysicalDeviceExternalSemaphoreProperties(device.physical(), &info, &props);
  a.features = props.externalSemaphoreFeatures;
  a.compatible = props.compatibleHandleTypes;
  a.export_from = props.exportFromImportedHandleTypes;
  return a;
}

std::string not_offered(const SemaphoreKind& kind, const Advertised& a, const char* feature) {
  return fmt::format("{} {} semaphores not {} on this device (vkGetPhysicalDeviceExternalSemaphoreProperties: {})",
                     kind.type_name, kind.handle_name, feature, a.text());
}

std::vector<std::string> wanted_extensions() {
  return {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, VK_KHR_DEDICATED_ALLOCATION_EXTENSION_NAME,
          VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME};
}

std::optional<std::string> missing_extension(const vk::Device& device) {
  for (const char* e : {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME,
                        VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME})
    if (!device.has(e)) return fmt::format("{} not exposed by the device", e);
  return std::nullopt;
}

Result<std::unique_ptr<SyncDevice>> SyncDevice::create(std::shared_ptr<vk::Device> device) {
  std::unique_ptr<SyncDevice> d(new SyncDevice());
  d->device_ = std::move(device);
  const auto gdpa = d->device_->instance().fn().vkGetDeviceProcAddr;
  const VkDevice h = d->device_->handle();
  const char* missing = nullptr;
#define EXTMEM_S1_LOAD(name)                                                   \
  d->fn_.name = reinterpret_cast<PFN_##name>(gdpa(h, #name));                  \
  if (d->fn_.name == nullptr && missing == nullptr) missing = #name;
  EXTMEM_S1_LOAD(vkCreateSemaphore)
  EXTMEM_S1_LOAD(vkDestroySemaphore)
  EXTMEM_S1_LOAD(vkGetSemaphoreFdKHR)
  EXTMEM_S1_LOAD(vkImportSemaphoreFdKHR)
  EXTMEM_S1_LOAD(vkSignalSemaphoreKHR)
  EXTMEM_S1_LOAD(vkWaitSemaphoresKHR)
  EXTMEM_S1_LOAD(vkGetSemaphoreCounterValueKHR)
  EXTMEM_S1_LOAD(vkGetFenceStatus)
  EXTMEM_S1_LOAD(vkCmdFillBuffer)
  EXTMEM_S1_LOAD(vkFreeCommandBuffers)
#undef EXTMEM_S1_LOAD
  if (missing != nullptr)
    return Error{"vkGetDeviceProcAddr", ErrorKind::unsupported, "NULL", fmt::format("{} not returned", missing)};
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.queueFamilyIndex = d->device_->queue_family();
  VkResult r = d->device_->fn().vkCreateCommandPool(h, &pci, nullptr, &d->pool_);
  if (r != VK_SUCCESS) return vk::vk_error("vkCreateCommandPool", r);
  return d;
}

SyncDevice::~SyncDevice() {
  if (pool_ != VK_NULL_HANDLE) device_->fn().vkDestroyCommandPool(device_->handle(), pool_, nullptr);
}

Semaphore& Semaphore::operator=(Semaphore&& o) noexcept {
  if (this != &o) {
    reset();
    d_ = o.d_;
    s_ = std::exchange(o.s_, VK_NULL_HANDLE);
  }
  return *this;
}

void Semaphore::reset() noexcept {
  if (s_ != VK_NULL_HANDLE) d_->fn().vkDestroySemaphore(d_->device().handle(), s_, nullptr);
  s_ = VK_NULL_HANDLE;
}

Result<Semaphore> create_semaphore(const SyncDevice& d, VkSemaphoreType type, VkExternalSemaphoreHandleTypeFlags export_bits,
                                   const std::string& what, std::uint64_t initial) {
  VkSemaphoreTypeCreateInfo t{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  t.semaphoreType = type;
  t.initialValue = type == VK_SEMAPHORE_TYPE_TIMELINE ? initial : 0;
  VkExportSemaphoreCreateInfo e{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO};
  e.handleTypes = export_bits;
  const void* chain = nullptr;
  if (type == VK_SEMAPHORE_TYPE_TIMELINE) {
    t.pNext = chain;
    chain = &t;
  }
  if (export_bits != 0) {
    e.pNext = chain;
    chain = &e;
  }
  VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  ci.pNext = chain;
  VkSemaphore s = VK_NULL_HANDLE;
  VkResult r = d.fn().vkCreateSemaphore(d.device().handle(), &ci, nullptr, &s);
  if (r != VK_SUCCESS) return vk::vk_error(fmt::format("vkCreateSemaphore({})", what), r);
  return Semaphore(&d, s);
}

Result<ExportedFd> export_fd(const SyncDevice& d, const Semaphore& s, const SemaphoreKind& kind) {
  VkSemaphoreGetFdInfoKHR gi{VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR};
  gi.semaphore = s.get();
  gi.handleType = kind.bit;
  int fd = -1;
  VkResult r = d.fn().vkGetSemaphoreFdKHR(d.device().handle(), &gi, &fd);
  if (r != VK_SUCCESS) return vk::vk_error(fmt::format("vkGetSemaphoreFdKHR({})", kind.handle_name), r);
  ExportedFd out;
  out.minus_one = fd < 0;
  out.fd = os::UniqueFd(fd);
  return out;
}

Status import_fd(const SyncDevice& d, const Semaphore& s, const SemaphoreKind& kind, int fd) {
  VkImportSemaphoreFdInfoKHR ii{VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR};
  ii.semaphore = s.get();
  ii.flags = kind.temporary ? VK_SEMAPHORE_IMPORT_TEMPORARY_BIT : 0;
  ii.handleType = kind.bit;
  ii.fd = fd;
  VkResult r = d.fn().vkImportSemaphoreFdKHR(d.device().handle(), &ii);
  if (r != VK_SUCCESS)
    return vk::vk_error(fmt::format("vkImportSemaphoreFdKHR({})", kind.handle_name), r,
                        kind.temporary ? "temporary" : "permanent");
  return {};
}

Fence& Fence::operator=(Fence&& o) noexcept {
  if (this != &o) {
    reset();
    d_ = o.d_;
    f_ = std::exchange(o.f_, VK_NULL_HANDLE);
  }
  return *this;
}

void Fence::reset() noexcept {
  if (f_ != VK_NULL_HANDLE) d_->device().fn().vkDestroyFence(d_->device().handle(), f_, nullptr);
  f_ = VK_NULL_HANDLE;
}

Result<Fence> create_fence(const SyncDevice& d) {
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence f = VK_NULL_HANDLE;
  VkResult r = d.device().fn().vkCreateFence(d.device().handle(), &fci, nullptr, &f);
  if (r != VK_SUCCESS) return vk::vk_error("vkCreateFence", r);
  return Fence(&d, f);
}

Result<VkCommandBuffer> record(const SyncDevice& d, const std::function<void(VkCommandBuffer)>& body) {
  const auto& f = d.device().fn();
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = d.pool();
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkResult r = f.vkAllocateCommandBuffers(d.device().handle(), &cai, &cmd);
  if (r != VK_SUCCESS) return vk::vk_error("vkAllocateCommandBuffers", r);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  r = f.vkBeginCommandBuffer(cmd, &bi);
  if (r != VK_SUCCESS) return vk::vk_error("vkBeginCommandBuffer", r);
  body(cmd);
  r = f.vkEndCommandBuffer(cmd);
  if (r != VK_SUCCESS) return vk::vk_error("vkEndCommandBuffer", r);
  return cmd;
}

Status submit(const SyncDevice& d, const Submit& s, const std::string& what) {
  VkTimelineSemaphoreSubmitInfo tsi{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  tsi.waitSemaphoreValueCount = s.wait != VK_NULL_HANDLE ? 1 : 0;
  tsi.pWaitSemaphoreValues = &s.wait_value;
  tsi.signalSemaphoreValueCount = s.signal != VK_NULL_HANDLE ? 1 : 0;
  tsi.pSignalSemaphoreValues = &s.signal_value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &tsi;  // values for binary semaphores are ignored, so one shape serves both
  si.waitSemaphoreCount = s.wait != VK_NULL_HANDLE ? 1 : 0;
  si.pWaitSemaphores = &s.wait;
  si.pWaitDstStageMask = &s.wait_stage;
  si.commandBufferCount = s.cmd != VK_NULL_HANDLE ? 1 : 0;
  si.pCommandBuffers = &s.cmd;
  si.signalSemaphoreCount = s.signal != VK_NULL_HANDLE ? 1 : 0;
  si.pSignalSemaphores = &s.signal;
  VkResult r = d.device().fn().vkQueueSubmit(d.device().queue(), 1, &si, s.fence);
  if (r != VK_SUCCESS) return vk::vk_error(fmt::format("vkQueueSubmit({})", what), r);
  return {};
}

Result<bool> wait_fence(const SyncDevice& d, const Fence& f, std::uint64_t timeout_ns, const std::string& what) {
  VkFence h = f.get();
  VkResult r = d.device().fn().vkWaitForFences(d.device().handle(), 1, &h, VK_TRUE, timeout_ns);
  if (r == VK_SUCCESS) return true;
  if (r == VK_TIMEOUT) return false;
  return vk::vk_error(fmt::format("vkWaitForFences({})", what), r);
}

void barrier(const vk::Device& d, VkCommandBuffer cmd, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size,
             VkAccessFlags src, VkAccessFlags dst, VkPipelineStageFlags src_stage, VkPipelineStageFlags dst_stage,
             std::uint32_t src_family, std::uint32_t dst_family) {
  VkBufferMemoryBarrier b{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  b.srcAccessMask = src;
  b.dstAccessMask = dst;
  b.srcQueueFamilyIndex = src_family;
  b.dstQueueFamilyIndex = dst_family;
  b.buffer = buffer;
  b.offset = offset;
  b.size = size;
  d.fn().vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, nullptr, 1, &b, 0, nullptr);
}

}  // namespace extmem::probe::vksync
