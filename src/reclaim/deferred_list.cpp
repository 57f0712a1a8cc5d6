#include "extmem/reclaim/deferred_list.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

namespace extmem::reclaim {

DeferredReleaseList::DeferredReleaseList(SubmitTracker& tracker, DestroyFn destroy, ListOptions options)
    : tracker_(tracker), destroy_(std::move(destroy)), options_(options) {}

DeferredReleaseList::~DeferredReleaseList() { destroy_all(); }

void DeferredReleaseList::store_created() {
  ++gauges_.live_stores;
  gauges_.live_stores_peak = std::max(gauges_.live_stores_peak, gauges_.live_stores);
}

bool DeferredReleaseList::complete(SubmitIndex index) {
  // Completion is monotonic, so one poll that saw N complete answers for every index up to N.
  if (index <= known_complete_) return true;
  ++gauges_.fence_polls;
  if (!tracker_.is_complete(index)) return false;
  known_complete_ = index;
  return true;
}

void DeferredReleaseList::destroy_front() {
  const Parked p = parked_.front();
  parked_.pop_front();
  gauges_.parked_bytes -= p.bytes;
  --gauges_.parked_count;
  if (gauges_.live_stores > 0) --gauges_.live_stores;
  destroy_(p.store, p.bytes);
}

bool DeferredReleaseList::over_watermark() const {
  if (options_.budget_bytes == 0) return false;  // negative control: watermarks off
  return gauges_.parked_bytes > options_.budget_bytes || gauges_.parked_count > kParkedCountCeiling;
}

Result<bool> DeferredReleaseList::release(StoreToken store, FrameSerial last_use, std::uint64_t bytes) {
  if (options_.policy == ReleasePolicy::proven_dead && last_use.value == 0) {
    // Proof 1: no GPU command references it.
    destroy_unparked(store, bytes);
    return true;
  }
  SubmitIndex index = tracker_.sync_point();
  // A discarded recording can lower the sync point below an earlier parking;
  // raising it keeps the prefix property and only makes this entry wait longer.
  if (!parked_.empty()) index = std::max(index, parked_.back().index);
  assert(parked_.empty() || parked_.back().index <= index);
  parked_.push_back(Parked{store, last_use, index, bytes});
  gauges_.parked_bytes += bytes;
  ++gauges_.parked_count;
  gauges_.parked_bytes_peak = std::max(gauges_.parked_bytes_peak, gauges_.parked_bytes);
  gauges_.parked_count_peak = std::max(gauges_.parked_count_peak, gauges_.parked_count);
  if (options_.policy == ReleasePolicy::frame_bucketed) return false;

  sweep();
  if (over_watermark()) {
    ++gauges_.forced_syncs;
    const SubmitIndex at = tracker_.sync_point();
    const std::uint64_t bytes_before = gauges_.parked_bytes;
    const std::uint64_t count_before = gauges_.parked_count;
    Status waited = tracker_.flush_and_wait(at);
    if (!waited) {
      const Error& e = waited.error();
      return Error{kWatermarkSite, e.kind, e.code,
                   fmt::format("forced sync on submit index {} with {} bytes in {} parked stores (budget {} bytes, "
                               "ceiling {} stores) failed at {}{}{}",
                               at.value, bytes_before, count_before, options_.budget_bytes, kParkedCountCeiling,
                               e.step, e.detail.empty() ? "" : ": ", e.detail)};
    }
    sweep();
  }
  // Destruction is by prefix, so the newest entry is gone only when all are.
  return parked_.empty();
}

std::size_t DeferredReleaseList::sweep() {
  std::size_t destroyed = 0;
  // Proof 2 over the prefix: stop at the first entry whose submission has not retired.
  while (!parked_.empty() && complete(parked_.front().index)) {
    destroy_front();
    ++destroyed;
  }
  // Proof 3: an idle tracker means nothing parked can be referenced, including
  // entries whose index belonged to a discarded recording and will never complete.
  // A sync point at or above the incomplete front index cannot be complete
  // either, so only a lower one (a recording was discarded) is worth a poll.
  if (!parked_.empty() && tracker_.sync_point() < parked_.front().index && complete(tracker_.sync_point())) {
    while (!parked_.empty()) {
      destroy_front();
      ++destroyed;
    }
  }
  if (destroyed > 0) ++gauges_.destroy_epoch;
  return destroyed;
}

Status DeferredReleaseList::end_frame() {
  if (options_.policy == ReleasePolicy::proven_dead) {
    sweep();
    return {};
  }
  if (parked_.empty()) return {};
  Status waited = tracker_.flush_and_wait(tracker_.sync_point());
  if (!waited) {
    Error e = std::move(waited).error();
    e.step = "frame boundary: " + e.step;
    return e;
  }
  destroy_all();
  return {};
}

std::size_t DeferredReleaseList::destroy_all() {
  const std::size_t n = parked_.size();
  while (!parked_.empty()) destroy_front();
  if (n > 0) ++gauges_.destroy_epoch;
  return n;
}

void DeferredReleaseList::destroy_unparked(StoreToken store, std::uint64_t bytes) {
  if (gauges_.live_stores > 0) --gauges_.live_stores;
  destroy_(store, bytes);
  ++gauges_.destroy_epoch;
}

Status DeferredReleaseList::shutdown() {
  Status waited = tracker_.flush_and_wait(tracker_.sync_point());
  if (!waited) {
    Error e = std::move(waited).error();
    e.step = "shutdown: " + e.step;
    return e;
  }
  destroy_all();
  return {};
}

std::string Gauges::line() const {
  return fmt::format(
      "live_stores={} live_stores_peak={} parked_bytes={} parked_bytes_peak={} parked_count={} "
      "parked_count_peak={} forced_syncs={} destroy_epoch={} fence_polls={}",
      live_stores, live_stores_peak, parked_bytes, parked_bytes_peak, parked_count, parked_count_peak, forced_syncs,
      destroy_epoch, fence_polls);
}

}  // namespace extmem::reclaim
