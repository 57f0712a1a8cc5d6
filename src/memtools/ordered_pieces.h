// Private to memtools: work split into numbered pieces, done by several
// threads, the results handed on in piece order by the calling thread.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace extmem::memtools::detail {

/// Runs `work(i)` (returning R) for i in [0, pieces) on `threads` threads
/// and the caller (which works on pieces too while it waits for the next one
/// to deliver), at most 2 x threads pieces ahead of delivery, and calls
/// `deliver(i, R&&)` on the calling thread in order of i; a deliver returning
/// false stops the rest (pieces in flight finish, their results are dropped).
/// Returns false when stopped early. `work` must be safe to call concurrently.
template <class R, class Work, class Deliver>
bool run_ordered_pieces(std::size_t pieces, unsigned threads, Work work, Deliver deliver) {
  std::vector<std::optional<R>> results(pieces);
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t next = 0, delivered = 0;
  bool stopping = false;
  const std::size_t ahead = 2 * std::max(1u, threads);
  auto worker = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stopping || next >= pieces || next < delivered + ahead; });
      if (stopping || next >= pieces) return;
      const std::size_t i = next++;
      lock.unlock();
      R r = work(i);
      lock.lock();
      results[i] = std::move(r);
      changed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // fewer threads: the caller does what nobody claims
    }
  }
  bool go_on = true;
  for (std::size_t i = 0; i < pieces && go_on; ++i) {
    std::optional<R> r;
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (next <= i) {
        next = i + 1;
        lock.unlock();
        r = work(i);
      } else {
        // While piece i is in a helper's hands the caller does a piece of its
        // own (within the window) rather than sleep: with one helper on two
        // CPUs, waiting left one CPU idle.
        while (!results[i].has_value()) {
          if (next < pieces && next < i + ahead && !stopping) {
            const std::size_t j = next++;
            lock.unlock();
            R own = work(j);
            lock.lock();
            results[j] = std::move(own);
          } else {
            changed.wait(lock, [&] { return results[i].has_value() || (next < pieces && next < i + ahead); });
          }
        }
        r = std::move(results[i]);
        results[i].reset();
      }
    }
    go_on = deliver(i, std::move(*r));
    {
      std::lock_guard<std::mutex> lock(mutex);
      delivered = i + 1;
      if (!go_on) stopping = true;
    }
    changed.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  for (std::thread& t : pool) t.join();
  return go_on;
}

}  // namespace extmem::memtools::detail
