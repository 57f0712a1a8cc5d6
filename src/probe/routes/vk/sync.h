// Vulkan pieces of the S1 rows (docs/probe.md, "S1"): the semaphore handle
// kinds, what the driver advertises for them, move-only semaphores, fences and
// command buffers, and the entry points of VK_KHR_external_semaphore_fd and
// VK_KHR_timeline_semaphore resolved on the caller's device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <vulkan/vulkan.h>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"
#include "vulkan/context.h"

namespace extmem::probe::vksync {

/// One S1 semaphore flavour: handle type, semaphore type and how it is imported.
struct SemaphoreKind {
  VkExternalSemaphoreHandleTypeFlagBits bit;
  const char* handle_name;     ///< "OPAQUE_FD", "SYNC_FD"
  VkSemaphoreType type;        ///< binary or timeline
  const char* type_name;       ///< "binary", "timeline"
  bool temporary;              ///< imported with VK_SEMAPHORE_IMPORT_TEMPORARY_BIT (SYNC_FD must be)
  const char* transference;    ///< the Vulkan spec's transference for the handle type: "reference" or "copy"
};
inline constexpr SemaphoreKind kBinaryOpaque{VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT, "OPAQUE_FD",
                                             VK_SEMAPHORE_TYPE_BINARY, "binary", false, "reference"};
inline constexpr SemaphoreKind kTimelineOpaque{VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT, "OPAQUE_FD",
                                               VK_SEMAPHORE_TYPE_TIMELINE, "timeline", false, "reference"};
inline constexpr SemaphoreKind kBinarySyncFd{VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT, "SYNC_FD",
                                             VK_SEMAPHORE_TYPE_BINARY, "binary", true, "copy"};

/// vkGetPhysicalDeviceExternalSemaphoreProperties for one handle type and
/// semaphore type (VkSemaphoreTypeCreateInfo chained; Vulkan 1.1 core +
/// VK_KHR_timeline_semaphore). Decides UNSUPPORTED-vs-FAIL at every S1 site.
struct Advertised {
  std::uint32_t features = 0;    ///< VkExternalSemaphoreFeatureFlags
  std::uint32_t compatible = 0;  ///< compatibleHandleTypes
  std::uint32_t export_from = 0; ///< exportFromImportedHandleTypes
  bool exportable() const { return (features & VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT) != 0; }
  bool importable() const { return (features & VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT) != 0; }
  /// "externalSemaphoreFeatures=0x3 compatible=0x1 exportFrom=0x1".
  std::string text() const;
};
Advertised advertised(const vk::Device& device, const SemaphoreKind& kind);

/// "<type> <handle> semaphores not exportable on this device (vkGetPhysicalDeviceExternalSemaphoreProperties:
/// externalSemaphoreFeatures=0x0 ...)": the UNSUPPORTED reason when the driver does not offer the kind.
std::string not_offered(const SemaphoreKind& kind, const Advertised& a, const char* feature);

/// Entry points the S1 rows call beyond vk::DeviceFns, resolved with
/// vkGetDeviceProcAddr on one device.
struct Fns {
  PFN_vkCreateSemaphore vkCreateSemaphore = nullptr;
  PFN_vkDestroySemaphore vkDestroySemaphore = nullptr;
  PFN_vkGetSemaphoreFdKHR vkGetSemaphoreFdKHR = nullptr;
  PFN_vkImportSemaphoreFdKHR vkImportSemaphoreFdKHR = nullptr;
  PFN_vkSignalSemaphoreKHR vkSignalSemaphoreKHR = nullptr;
  PFN_vkWaitSemaphoresKHR vkWaitSemaphoresKHR = nullptr;
  PFN_vkGetSemaphoreCounterValueKHR vkGetSemaphoreCounterValueKHR = nullptr;
  PFN_vkGetFenceStatus vkGetFenceStatus = nullptr;
  PFN_vkCmdFillBuffer vkCmdFillBuffer = nullptr;
  PFN_vkFreeCommandBuffers vkFreeCommandBuffers = nullptr;
};

/// The device extensions an S1 Vulkan half enables (on the kept device, drivers.cpp).
std::vector<std::string> wanted_extensions();

/// "<ext> not exposed by the device" for the first of VK_KHR_external_semaphore_fd
/// and VK_KHR_timeline_semaphore the device lacks (timeline semaphores hold
/// the binary rows' signal back too), else nullopt.
std::optional<std::string> missing_extension(const vk::Device& device);

/// A device with the S1 entry points and a command pool of its own (resettable
/// command buffers, for submissions recorded once and waited on later). The
/// vk::Device is shared with the process's other routes; everything made here is
/// released by the destructor, after the caller has waited for its work.
class SyncDevice {
 public:
  /// Resolves Fns and creates the pool. Errors: unsupported naming an entry point
  /// the driver did not return (step "vkGetDeviceProcAddr"), vk_error("vkCreateCommandPool").
  static Result<std::unique_ptr<SyncDevice>> create(std::shared_ptr<vk::Device> device);
  ~SyncDevice();
  SyncDevice(const SyncDevice&) = delete;
  SyncDevice& operator=(const SyncDevice&) = delete;

  const vk::Device& device() const { return *device_; }
  const Fns& fn() const { return fn_; }
  VkCommandPool pool() const { return pool_; }

 private:
  SyncDevice() = default;
  std::shared_ptr<vk::Device> device_;
  Fns fn_{};
  VkCommandPool pool_ = VK_NULL_HANDLE;
};

/// A VkSemaphore owned here; destroyed with the SyncDevice's functions.
class Semaphore {
 public:
  Semaphore() = default;
  Semaphore(const SyncDevice* d, VkSemaphore s) : d_(d), s_(s) {}
  Semaphore(Semaphore&& o) noexcept : d_(o.d_), s_(std::exchange(o.s_, VK_NULL_HANDLE)) {}
  Semaphore& operator=(Semaphore&& o) noexcept;
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;
  ~Semaphore() { reset(); }
  VkSemaphore get() const { return s_; }
  /// Forgets the handle without destroying it: for a semaphore that pending GPU
  /// work still waits on after a drain failed (destroying it would be undefined).
  void leak() { s_ = VK_NULL_HANDLE; }

 private:
  void reset() noexcept;
  const SyncDevice* d_ = nullptr;
  VkSemaphore s_ = VK_NULL_HANDLE;
};

/// Creates a semaphore of `type`; with `export_bits` non-zero chains
/// VkExportSemaphoreCreateInfo (the export site). `initial` is a timeline's
/// starting value. Errors: vk_error("vkCreateSemaphore(<what>)").
Result<Semaphore> create_semaphore(const SyncDevice& d, VkSemaphoreType type, VkExternalSemaphoreHandleTypeFlags export_bits,
                                   const std::string& what, std::uint64_t initial = 0);

/// vkGetSemaphoreFdKHR: a new fd owned by the caller. SYNC_FD may legally
/// return -1 ("already signalled"); that comes back as an invalid UniqueFd with
/// `minus_one` set. Errors: vk_error("vkGetSemaphoreFdKHR(<handle>)").
struct ExportedFd {
  os::UniqueFd fd;
  bool minus_one = false;
};
Result<ExportedFd> export_fd(const SyncDevice& d, const Semaphore& s, const SemaphoreKind& kind);

/// vkImportSemaphoreFdKHR of `fd` into `s` (temporary when kind.temporary).
/// On success the driver owns `fd` (Vulkan spec, "Importing Semaphore Payloads");
/// on failure the caller still does. Errors: vk_error("vkImportSemaphoreFdKHR(<handle>)").
Status import_fd(const SyncDevice& d, const Semaphore& s, const SemaphoreKind& kind, int fd);

/// A VkFence owned here.
class Fence {
 public:
  Fence() = default;
  Fence(const SyncDevice* d, VkFence f) : d_(d), f_(f) {}
  Fence(Fence&& o) noexcept : d_(o.d_), f_(std::exchange(o.f_, VK_NULL_HANDLE)) {}
  Fence& operator=(Fence&& o) noexcept;
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;
  ~Fence() { reset(); }
  VkFence get() const { return f_; }
  void leak() { f_ = VK_NULL_HANDLE; }

 private:
  void reset() noexcept;
  const SyncDevice* d_ = nullptr;
  VkFence f_ = VK_NULL_HANDLE;
};
/// Errors: vk_error("vkCreateFence").
Result<Fence> create_fence(const SyncDevice& d);

/// One primary command buffer from the SyncDevice's pool, recorded by `record`
/// and ended. Freed with the pool. Errors: the failing call's vk_error.
Result<VkCommandBuffer> record(const SyncDevice& d, const std::function<void(VkCommandBuffer)>& body);

/// One vkQueueSubmit with at most one wait and one signal semaphore, each with
/// its timeline value where it is a timeline (0 for binary: ignored).
struct Submit {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkSemaphore wait = VK_NULL_HANDLE;
  std::uint64_t wait_value = 0;
  VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSemaphore signal = VK_NULL_HANDLE;
  std::uint64_t signal_value = 0;
  VkFence fence = VK_NULL_HANDLE;
};
/// Errors: vk_error("vkQueueSubmit(<what>)").
Status submit(const SyncDevice& d, const Submit& s, const std::string& what);

/// vkWaitForFences for at most `timeout_ns`: VK_SUCCESS -> true, VK_TIMEOUT -> false.
/// Errors: any other VkResult (vk_error("vkWaitForFences(<what>)")).
Result<bool> wait_fence(const SyncDevice& d, const Fence& f, std::uint64_t timeout_ns, const std::string& what);

/// Buffer memory barrier on `buffer` [offset, offset + size) from `src` access at
/// `src_stage` to `dst` access at `dst_stage`, with queue family indices
/// `src_family` and `dst_family` (VK_QUEUE_FAMILY_EXTERNAL for the ownership
/// transfer of memory shared with another device, VK_QUEUE_FAMILY_IGNORED for none).
void barrier(const vk::Device& d, VkCommandBuffer cmd, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size,
             VkAccessFlags src, VkAccessFlags dst, VkPipelineStageFlags src_stage, VkPipelineStageFlags dst_stage,
             std::uint32_t src_family = VK_QUEUE_FAMILY_IGNORED, std::uint32_t dst_family = VK_QUEUE_FAMILY_IGNORED);

}  // namespace extmem::probe::vksync
