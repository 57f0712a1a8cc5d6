// extmem::reclaim on lavapipe (or the first Vulkan device): one long frame of
// respecify-and-use operations of mixed sizes, with the deferred-release list
// (docs/reclaim.md) and with the frame-bucketed baseline (park until the next
// frame boundary), in one run. Counters: ops_per_s (throughput),
// peak_parked_bytes, peak_live_stores, peak_parked_count, forced_syncs.
//
//   ./build/bench/reclaim_bench --benchmark_enable_random_interleaving=true
//   (EXTMEM_RECLAIM_BENCH_OPS overrides the 100000 operations per run)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "extmem/reclaim/vulkan.h"

namespace rc = extmem::reclaim;

namespace {

constexpr std::uint32_t kBand = 64;
constexpr std::uint32_t kSubmitEvery = 64;  // uses per submission, as a driver flushing a full batch

std::uint64_t ops() {
  const char* v = std::getenv("EXTMEM_RECLAIM_BENCH_OPS");
  return v != nullptr ? std::strtoull(v, nullptr, 10) : 100'000;
}

// Sizes 256 B .. 64 KiB, chosen by a fixed LCG so both policies see the same sequence.
std::uint64_t size_of(std::uint64_t& state) {
  static constexpr std::uint64_t kSizes[] = {256, 1024, 4096, 16384, 65536};
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return kSizes[(state >> 33) % 5];
}

void respecify_and_use(benchmark::State& state, rc::ReleasePolicy policy) {
  const std::uint64_t n = ops();
  auto made = rc::VulkanBuffers::create(
      {.policy = policy, .submit_every_uses = kSubmitEvery, .output_words = kBand});
  if (!made) {
    state.SkipWithError(made.error().message().c_str());
    return;
  }
  rc::VulkanBuffers& v = **made;
  const rc::BufferId b = v.create_buffer();
  std::uint64_t lcg = 1;
  std::uint32_t last_colour = 0;
  for (auto _ : state) {
    for (std::uint64_t i = 0; i < n; ++i) {
      last_colour = static_cast<std::uint32_t>(i) | 0x80000000u;
      extmem::Status s = v.respecify(b, size_of(lcg), last_colour);
      if (s) s = v.paint(b, 0, kBand);
      if (!s) {
        state.SkipWithError(s.error().message().c_str());
        return;
      }
    }
    // The frame boundary is part of the run: the baseline frees everything here.
    if (extmem::Status s = v.end_frame(); !s) {
      state.SkipWithError(s.error().message().c_str());
      return;
    }
    auto out = v.read_output();
    if (!out || (*out)[0] != last_colour) {
      state.SkipWithError("the final use did not land");
      return;
    }
  }
  const rc::Gauges& g = v.gauges();
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
  state.counters["peak_parked_bytes"] = static_cast<double>(g.parked_bytes_peak);
  state.counters["peak_live_stores"] = static_cast<double>(g.live_stores_peak);
  state.counters["peak_parked_count"] = static_cast<double>(g.parked_count_peak);
  state.counters["forced_syncs"] = static_cast<double>(g.forced_syncs);
  state.SetLabel(g.line());
}

void BM_ProvenDead(benchmark::State& state) { respecify_and_use(state, rc::ReleasePolicy::proven_dead); }
void BM_FrameBucketed(benchmark::State& state) { respecify_and_use(state, rc::ReleasePolicy::frame_bucketed); }

BENCHMARK(BM_ProvenDead)->Iterations(1)->Repetitions(5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FrameBucketed)->Iterations(1)->Repetitions(5)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
