// Bounded deferred release of orphaned GPU buffer stores (docs/reclaim.md).
//
// The list knows nothing about Vulkan or GL: it sees stores as opaque tokens
// with a size, asks a SubmitTracker whether submissions have retired, and hands
// dead stores to a destroy callback. The Vulkan binding is extmem/reclaim/vulkan.h.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "extmem/core/error.h"

namespace extmem::reclaim {

/// Index a batch of recorded GPU work is (or will be) submitted under.
/// Submissions get consecutive indices starting at 1; 0 means "nothing submitted".
struct SubmitIndex {
  std::uint64_t value = 0;
  auto operator<=>(const SubmitIndex&) const = default;
};

/// Frame serial stamped on a store whenever a GPU command is recorded that
/// references it. Frames count from 1; 0 means "no GPU command has referenced
/// the store since it was made or since the last host-access wait" (docs/reclaim.md, "Model").
struct FrameSerial {
  std::uint64_t value = 0;
  auto operator<=>(const FrameSerial&) const = default;
};

/// Parked-count ceiling: more parked stores than this forces a sync point even
/// when they are small (docs/reclaim.md, "Bounds": drivers charge per object).
inline constexpr std::size_t kParkedCountCeiling = 1024;
/// Default parked-bytes budget: 64 MiB (docs/reclaim.md, "Bounds").
inline constexpr std::uint64_t kDefaultBudgetBytes = 64ull << 20;
/// Environment variable holding the budget in MiB (whole number, 0 = watermarks off).
inline constexpr const char* kBudgetEnvVar = "EXTMEM_RECLAIM_BUDGET_MB";
/// Largest budget accepted from the environment, MiB (1 TiB).
inline constexpr std::uint64_t kMaxBudgetMiB = 1ull << 20;
/// Error step of a failed forced sync point (docs/reclaim.md, "Bounds").
inline constexpr const char* kWatermarkSite = "deferred-watermark";

/// What the list needs from the GPU side (docs/reclaim.md, "Model": submit tracker).
/// Completion must be monotonic: once index N is complete, every index below N is.
class SubmitTracker {
 public:
  virtual ~SubmitTracker() = default;
  /// The index the work recorded so far will be submitted under: the last
  /// submitted index + 1 while a recording is open, else the last submitted index.
  virtual SubmitIndex sync_point() const = 0;
  /// Whether submission `index` has retired (one fence/timeline poll).
  /// Index 0 is always complete; an index not yet submitted is not.
  virtual bool is_complete(SubmitIndex index) = 0;
  /// Submits the open recording when `index` is its index, then waits until
  /// `index` is complete. Errors: the driver's (device lost, submit failed), with its step.
  virtual Status flush_and_wait(SubmitIndex index) = 0;
};

/// Opaque identity of a store for the destroy callback (a pointer or handle value).
using StoreToken = std::uint64_t;
/// Destroys one store. `bytes` is the size given when it was released. Must not throw.
using DestroyFn = std::function<void(StoreToken store, std::uint64_t bytes)>;

/// The list's running figures (docs/reclaim.md, "Gauges"). Peaks are running
/// maxima over the list's life, taken at the moment of every change.
struct Gauges {
  std::uint64_t live_stores = 0;        ///< stores created and not yet destroyed (current + parked)
  std::uint64_t live_stores_peak = 0;
  std::uint64_t parked_bytes = 0;       ///< bytes of parked stores
  std::uint64_t parked_bytes_peak = 0;
  std::uint64_t parked_count = 0;       ///< parked stores
  std::uint64_t parked_count_peak = 0;
  std::uint64_t forced_syncs = 0;       ///< sync points forced by a watermark
  std::uint64_t destroy_epoch = 0;      ///< see DeferredReleaseList::destroy_epoch()
  std::uint64_t fence_polls = 0;        ///< SubmitTracker::is_complete calls made by the list

  /// One line of `key=value` pairs separated by spaces, e.g.
  /// "live_stores=1 live_stores_peak=10 parked_bytes=0 ... destroy_epoch=7 fence_polls=12".
  std::string line() const;
};

/// How released stores are kept.
enum class ReleasePolicy {
  /// docs/reclaim.md: proofs 1-3, prefix sweep at every park, watermarks.
  proven_dead,
  /// The baseline docs/reclaim.md argues against: every released store waits for the
  /// next frame boundary (end_frame()), whatever proves it dead earlier. For benchmarks.
  frame_bucketed,
};

struct ListOptions {
  /// Parked-bytes watermark, bytes. 0 turns both watermarks (bytes and count)
  /// off: a negative control, proofs 1-3 still run.
  std::uint64_t budget_bytes = kDefaultBudgetBytes;
  ReleasePolicy policy = ReleasePolicy::proven_dead;
};

/// The flat, parking-ordered list of orphaned stores (docs/reclaim.md).
///
/// Invariant: parked submit indices never decrease from front to back (checked
/// on insert; a lower index from a discarded recording is raised to the back's,
/// which only delays its death), so the dead entries form a prefix.
/// Not thread-safe: one owner drives it, like the GL context it serves.
class DeferredReleaseList {
 public:
  /// `tracker` must outlive the list. `destroy` is called once per store.
  DeferredReleaseList(SubmitTracker& tracker, DestroyFn destroy, ListOptions options = {});
  /// Destroys whatever is still parked (destroy_all()): the owner must have
  /// made the GPU idle first (shutdown() does).
  ~DeferredReleaseList();
  DeferredReleaseList(const DeferredReleaseList&) = delete;
  DeferredReleaseList& operator=(const DeferredReleaseList&) = delete;

  /// Counts a newly made store as live (live gauge and its peak).
  void store_created();

  /// Orphans a store whose buffer now points elsewhere (or was deleted).
  /// Proof 1 (`last_use == 0`) destroys it at once; otherwise it is parked
  /// under the tracker's sync point, the prefix sweep runs, and if the parked
  /// bytes exceed the budget or the parked count exceeds kParkedCountCeiling,
  /// one sync point is forced (flush and wait) and the list swept again.
  /// Returns true when the store was destroyed before returning.
  /// Errors: a failed forced sync: step kWatermarkSite, the tracker's kind and
  /// code, detail naming the tracker's step; the store stays parked.
  Result<bool> release(StoreToken store, FrameSerial last_use, std::uint64_t bytes);

  /// The prefix sweep: destroys parked entries from the front while their
  /// submit index is complete (proof 2); if any remain and the tracker is idle
  /// (its sync point is complete: proof 3) destroys them all. Costs at most one
  /// poll per distinct submit index in the dead prefix, one for the first live
  /// entry, and one for the idle check when the sync point is below that
  /// entry's index. Returns the number of stores destroyed.
  std::size_t sweep();

  /// Frame boundary: sweeps (proven_dead), or for frame_bucketed waits for the
  /// sync point and destroys every parked store. Errors: the tracker's, step
  /// prefixed with "frame boundary: ".
  Status end_frame();

  /// Destroys every parked store without asking the tracker. Only for a GPU
  /// known to be idle (device idle, device lost). Returns the number destroyed.
  std::size_t destroy_all();

  /// Destroys a store that is not parked and that the GPU cannot be using
  /// (a store whose buffer is deleted while the device is idle); counts as a
  /// destruction event.
  void destroy_unparked(StoreToken store, std::uint64_t bytes);

  /// Shutdown: waits for the tracker's sync point, then destroy_all().
  /// Errors: the tracker's, step prefixed with "shutdown: "; nothing is destroyed then.
  Status shutdown();

  /// Incremented by every destruction event: an immediate destroy, each sweep
  /// that destroyed anything, destroy_all() that destroyed anything,
  /// destroy_unparked(). Never reset. Caches keyed by store handles must key on it
  /// too, since a destroyed store's handle value may be handed to the next store.
  std::uint64_t destroy_epoch() const noexcept { return gauges_.destroy_epoch; }

  const Gauges& gauges() const noexcept { return gauges_; }
  const ListOptions& options() const noexcept { return options_; }

 private:
  struct Parked {
    StoreToken store;
    FrameSerial last_use;
    SubmitIndex index;
    std::uint64_t bytes;
  };
  bool complete(SubmitIndex index);
  void destroy_front();
  bool over_watermark() const;

  SubmitTracker& tracker_;
  DestroyFn destroy_;
  ListOptions options_;
  std::deque<Parked> parked_;
  SubmitIndex known_complete_{};  // highest index seen complete; polls below it are skipped
  Gauges gauges_;
};

/// Parses a budget in MiB as written in kBudgetEnvVar: a whole decimal number
/// from 0 to kMaxBudgetMiB, nothing else. Returns bytes. Errors: invalid_argument,
/// step kBudgetEnvVar, detail naming the value and what is accepted.
Result<std::uint64_t> parse_budget_mib(const std::string& text);

/// The budget to use, bytes: `api_bytes` when given, else kBudgetEnvVar when
/// set, else kDefaultBudgetBytes. Errors: parse_budget_mib's for a bad variable.
Result<std::uint64_t> resolve_budget(std::optional<std::uint64_t> api_bytes);

}  // namespace extmem::reclaim
