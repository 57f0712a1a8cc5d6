// The Vulkan sides of the S1 rows (docs/probe.md, "S1"): a waiter (GPU work
// that waits on a semaphore, then copies region E of the shared allocation out
// and writes a marker), a producer round (the GPU write of region E and a held
// signal), and the whole Vulkan server half, which exports the T1 allocation
// and then, on the peer's requests, produces (the peer waits) or waits (the
// peer signals: CUDA, GL).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "probe/routes/vk/sync.h"
#include "vulkan/host_clock.h"
#include "probe/sync_proof.h"
#include "probe/worker/child_context.h"

namespace extmem::probe::s1 {

/// The region the producer writes and the waiter copies out.
inline constexpr Region kRegion = Region::E;
/// The word the waiter's GPU writes after its copy, at byte kRegionSize of its private buffer.
inline constexpr std::uint32_t kMarker = 0x53594e43u;
/// The timeline value every S1 signal and wait uses.
inline constexpr std::uint64_t kTimelineValue = 1;
/// Every drain wait, nanoseconds.
inline constexpr std::uint64_t kDrainNs = 5'000'000'000ull;

/// The semaphore kind named `key` ("binary-opaque", "timeline-opaque", "binary-sync-fd"), or null.
const vksync::SemaphoreKind* kind_by_key(std::string_view key);
/// The key of `kind` (the inverse of kind_by_key).
const char* key_of(const vksync::SemaphoreKind& kind);

/// GPU work that waits on a semaphore, copies region E of `shared` into a
/// private host-visible buffer and then writes kMarker after the copy.
/// Move-free; owns its semaphore, fence and private buffer; borrows the device
/// and `shared`, which must outlive it.
class VkWaiter {
 public:
  /// Creates the private buffer (zeroed). Errors: create_buffer's.
  static Result<std::unique_ptr<VkWaiter>> create(vksync::SyncDevice& sd, VkBuffer shared, VkDeviceSize region_offset);
  ~VkWaiter();

  /// The semaphore waited on: set once, before arm().
  void set_semaphore(vksync::Semaphore s, VkSemaphoreType type) {
    sem_ = std::move(s);
    type_ = type;
  }
  const vksync::Semaphore& semaphore() const { return sem_; }
  /// Submits wait (value kTimelineValue for a timeline) -> acquire from
  /// VK_QUEUE_FAMILY_EXTERNAL -> copy -> marker, with a fence. Errors: the failing call's.
  Status arm(bool wait_on_semaphore = true);
  /// The proof's calibration (sync::OrderingSubject::ungated_copy): arm(false),
  /// a wait of at most `bound`, then the copy and the marker cleared once it
  /// completed. Errors: arm()'s and wait()'s.
  Result<sync::Waited> ungated(std::chrono::milliseconds bound);
  /// vkGetFenceStatus, the marker, vkGetSemaphoreCounterValueKHR (timeline). Never waits.
  Result<sync::Observation> observe();
  /// vkWaitForFences for at most `bound`.
  Result<sync::Waited> wait(std::chrono::milliseconds bound);
  /// The copy compared with `seed`'s pattern.
  sync::CopyCheck check(std::uint64_t seed) const;
  /// `wait_on_semaphore` false (test fault "nowait") leaves the wait out.
  /// Without a semaphore (none set) arm() submits the copy and marker with no
  /// wait: --measure's socket path. Re-arming replaces the fence (the previous
  /// work must have completed).
  /// Waits kDrainNs for armed work; on failure leaks what the work uses.
  bool drain();
  bool armed() const { return armed_; }
  /// --measure: from the next arm() on, the work writes a device timestamp at
  /// the TRANSFER stage before its copy, which the semaphore wait (dstStageMask
  /// TRANSFER) holds back: the moment the GPU started after the wait.
  /// Errors: vk::TimestampSlot::create's.
  Status time_start();
  /// That moment on `clock` (CLOCK_MONOTONIC seconds), once the armed work has
  /// completed (wait() returned signalled). Errors: protocol when time_start()
  /// was not called; vk::TimestampSlot::ticks()'s.
  Result<double> started_at(const vk::HostClock& clock) const;

 private:
  VkWaiter(vksync::SyncDevice& sd, VkBuffer shared, VkDeviceSize off) : sd_(sd), shared_(shared), off_(off) {}
  vksync::SyncDevice& sd_;
  VkBuffer shared_;
  VkDeviceSize off_;
  vk::Buffer copy_;
  vksync::Semaphore sem_;
  VkSemaphoreType type_ = VK_SEMAPHORE_TYPE_BINARY;
  vksync::Fence fence_;
  std::optional<vk::TimestampSlot> start_;
  bool armed_ = false;
  bool leaked_ = false;
};

/// The Vulkan server half of every S1 row: checks VK_KHR_external_semaphore_fd
/// and that each of `kinds` is exportable (else a setup failure, UNSUPPORTED
/// with the features the driver returned), exports the T1 allocation, sends it,
/// then answers the peer:
///   hold {kind, write}  fill E with the stale pattern; binary: submit the gated
///                   write + signal (write=false: the signal alone, a gate for a
///                   peer that writes E itself); reply with the semaphore's fd
///   release         host-signals the gate (binary) or submits write + signal 1;
///                   the reply's "t" is os::monotonic_seconds() just before (--measure)
///   ping            replies "t", os::monotonic_seconds() (--measure's socket round trip)
///   ping-gpu        --measure: the GPU writes E with no semaphore; once its fence
///                   is seen signalled, replies "t" (host, then) and "gpu_t" (the
///                   write's end on the GPU, CLOCK_MONOTONIC seconds through
///                   VK_EXT_calibrated_timestamps) or "gpu_error"
///   hold {time: true}  as hold, and the write's end is timed: the drain reply
///                   that follows carries "gpu_t" (or "gpu_error")
///   drain           lets held work run and waits for it
///   wait-export {kind}  creates an exportable semaphore (OPAQUE_FD, binary or timeline)
///                   for a waiter, replies with its fd
///   wait-arm        the waiter submits (see VkWaiter::arm)
///   wait-ungated {ms}  the waiter's copy without the wait, waited for (VkWaiter::ungated)
///   wait-observe / wait-wait {ms} / wait-check   the waiter's observe / wait / check
///   done
/// Returns the exit code (0).
int vk_side_serve(ChildContext& ctx, std::span<const vksync::SemaphoreKind* const> kinds);

/// A sync::OrderingSubject whose consumer is the peer's VkWaiter (wait-* requests)
/// and whose producer is this process, through `hold` (fill E with the stale
/// pattern: the peer's copy must not see it), `write_and_signal` (write E with
/// kProducerSeed and signal the exported timeline with kTimelineValue) and
/// `drain` (finish the producer's own work). The peer's semaphore fd comes from
/// "wait-export" in prepare(), which the caller imports before the proof. A
/// binary waiter's signal must be submitted before arm() (the producer's hold
/// submits it, itself gated), VUID-vkQueueSubmit-pWaitSemaphores-03238.
class PeerVkWaiter final : public sync::OrderingSubject {
 public:
  struct Producer {
    std::function<Status()> hold;
    std::function<Status()> write_and_signal;
    std::function<bool()> drain;
  };
  PeerVkWaiter(ChildContext& ctx, Producer p) : ctx_(ctx), p_(std::move(p)) {}
  /// Asks the peer for an exportable semaphore of `kind` (an OPAQUE_FD kind) to
  /// wait on; returns its fd (owned by the caller, who imports it).
  Result<os::UniqueFd> prepare(const vksync::SemaphoreKind& kind);
  Status hold() override { return p_.hold(); }
  Result<sync::Waited> ungated_copy(std::chrono::milliseconds bound) override;
  Status arm() override;
  Result<sync::Observation> observe() override;
  Result<sync::Waited> wait_consumer(std::chrono::milliseconds bound) override;
  Status release() override;
  Result<sync::CopyCheck> check_copy() override;
  bool drain() override;

 private:
  ChildContext& ctx_;
  Producer p_;
  bool released_ = false;
};

}  // namespace extmem::probe::s1
