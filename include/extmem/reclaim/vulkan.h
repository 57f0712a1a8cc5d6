// extmem::reclaim on a real Vulkan device: GL-style respecifiable buffers whose
// orphaned stores go through the DeferredReleaseList (docs/reclaim.md).
//
// Each buffer has one current store (a VkBuffer with its own host-visible
// VkDeviceMemory). respecify() orphans it like glBufferData; paint() is a GPU
// use (a compute dispatch that copies the store's first word into a band of an
// output buffer, through a descriptor set taken from a memo keyed by store
// handle, range and destroy epoch). Submissions on the one queue are indexed
// 1, 2, 3, ...; completion is read from a timeline semaphore signalled to each
// submission's index (VK_KHR_timeline_semaphore), or from one VkFence per
// submission where that is absent: a signalled fence retires every earlier
// submission too (Vulkan spec, "Fences": the signal's first synchronization
// scope holds all commands earlier in submission order).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/reclaim/binding_memo.h"
#include "extmem/reclaim/deferred_list.h"

namespace extmem::reclaim {

/// Gives each store the handle value binding memos key on. The default (no
/// source) uses the VkBuffer handle value itself, which drivers may reuse.
class HandleSource {
 public:
  virtual ~HandleSource() = default;
  /// A handle value for a new store whose VkBuffer is `vk_buffer`.
  virtual std::uint64_t acquire(std::uint64_t vk_buffer) = 0;
  /// The store holding `handle` was destroyed; the value may be handed out again.
  virtual void release(std::uint64_t handle) = 0;
};

/// Test double of a heap allocator: the most recently released value is handed
/// out first (LIFO), new values count up from 0x1000. Makes handle reuse exact.
class LifoHandleSource final : public HandleSource {
 public:
  std::uint64_t acquire(std::uint64_t vk_buffer) override;
  void release(std::uint64_t handle) override;

 private:
  std::vector<std::uint64_t> free_;
  std::uint64_t next_ = 0x1000;
};

/// How submissions are observed.
enum class SubmitTracking {
  automatic,  ///< timeline when the device exposes VK_KHR_timeline_semaphore, else fences
  timeline,   ///< a timeline semaphore; create() fails (unsupported) without the extension
  fences,     ///< one VkFence per submission
};

/// Stable lower-case name: "automatic", "timeline", "fences".
const char* to_string(SubmitTracking tracking) noexcept;

struct VulkanOptions {
  /// Parked-bytes budget, bytes; nullopt: EXTMEM_RECLAIM_BUDGET_MB, else 64 MiB.
  std::optional<std::uint64_t> budget_bytes;
  ReleasePolicy policy = ReleasePolicy::proven_dead;
  MemoKeying memo_keying = MemoKeying::handle_range_epoch;
  /// Submit the open recording (without waiting) after this many paint() calls; 0: never.
  std::uint32_t submit_every_uses = 0;
  /// Output buffer size in 32-bit words (>= 1).
  std::uint32_t output_words = 4096;
  /// Not owned, must outlive the object; null: handle values are VkBuffer values.
  HandleSource* handles = nullptr;
  /// Test-only: keep a destroyed store's VkBuffer and memory until the object is
  /// destroyed, so the negative control (a stale descriptor set) reads defined
  /// memory instead of freed memory. Gauges still count the store as destroyed.
  bool quarantine_destroyed = false;
  /// Physical device index; -1: the first device.
  int device_index = -1;
  SubmitTracking tracking = SubmitTracking::automatic;
};

/// Index of a buffer made by VulkanBuffers::create_buffer().
using BufferId = std::uint32_t;

class VulkanBuffers {
 public:
  /// Opens the Vulkan loader, an instance and a device, builds the compute
  /// pipeline and a zeroed output buffer. Errors: the budget's (bad
  /// EXTMEM_RECLAIM_BUDGET_MB), the loader's (unsupported), invalid_argument for
  /// output_words 0 or a device index out of range, unsupported for
  /// SubmitTracking::timeline without the extension, and the failing Vulkan
  /// call's (step and VkResult name).
  static Result<std::unique_ptr<VulkanBuffers>> create(const VulkanOptions& options);
  /// Waits for the device, then destroys every store and Vulkan object.
  ~VulkanBuffers();
  VulkanBuffers(const VulkanBuffers&) = delete;
  VulkanBuffers& operator=(const VulkanBuffers&) = delete;

  /// A new buffer without a store (like glGenBuffers + glBindBuffer).
  BufferId create_buffer();

  /// glBufferData: orphans the buffer's current store (released to the list)
  /// and gives it a new store of `bytes` (a multiple of 4, from 4 to 1 GiB)
  /// with every 32-bit word set to `fill`. Errors: invalid_argument (unknown
  /// buffer, bad size); the list's (step "deferred-watermark"); the store
  /// creation's Vulkan error. After an error the buffer has no store.
  Status respecify(BufferId buffer, std::uint64_t bytes, std::uint32_t fill);

  /// glDeleteBuffers for the store: releases the current store to the list;
  /// the buffer keeps its id and has no store until respecified. Errors: as respecify().
  Status delete_store(BufferId buffer);

  /// A GPU use: records a dispatch writing the current store's first word into
  /// output words [first, first + count) and stamps the store with the frame
  /// serial. Errors: invalid_argument (unknown buffer, no store, band outside
  /// the output); the failing Vulkan call's.
  Status paint(BufferId buffer, std::uint32_t first, std::uint32_t count);

  /// Submits the open recording without waiting (nothing when none is open).
  Status flush();
  /// Drops the open recording unsubmitted; its commands never run.
  void discard_recording();
  /// Waits until everything submitted so far has retired (no sweep).
  Status wait_submitted();
  /// Frame boundary: submits, runs the list's frame boundary, advances the frame serial.
  Status end_frame();
  /// Waits for the recorded work (submitting it) and marks the buffer's store as
  /// unreferenced (last_use_serial 0), as a host map for reading would.
  Status wait_for_host_access(BufferId buffer);
  /// Submits and waits, then copies the output buffer (output_words words).
  Result<std::vector<std::uint32_t>> read_output();

  /// Memo handle of the buffer's current store; 0 when it has none.
  std::uint64_t store_handle(BufferId buffer) const;
  const Gauges& gauges() const;
  /// Descriptor sets made because the memo missed, over the object's life.
  std::uint64_t descriptor_sets_made() const;
  /// The tracking in use: timeline or fences (never automatic).
  SubmitTracking tracking() const;
  /// VkPhysicalDeviceProperties::deviceName of the device in use.
  std::string device_name() const;

  struct Impl;

 private:
  explicit VulkanBuffers(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace extmem::reclaim
