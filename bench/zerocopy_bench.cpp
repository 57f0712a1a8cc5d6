// Cost of extmem::zerocopy::check and check_fn on a 4 KiB and a 1 GiB view.
// The views are two MAP_SHARED mappings of one sparse 1 GiB memfd: only the
// pages the check probes ever get memory. The claim under test is that the
// cost depends on the number of probed offsets, not on the size.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "extmem/core/zerocopy.h"

namespace zc = extmem::zerocopy;

namespace {

constexpr std::size_t kMapped = std::size_t{1} << 30;

// One memfd mapped twice for the whole program; never unmapped (process exit does it).
struct TwoViews {
  std::byte* producer = nullptr;
  const std::byte* consumer = nullptr;

  TwoViews() {
    const int fd = memfd_create("zerocopy_bench", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(kMapped)) != 0) {
      std::perror("memfd_create/ftruncate");
      std::abort();
    }
    void* a = mmap(nullptr, kMapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    void* b = mmap(nullptr, kMapped, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (a == MAP_FAILED || b == MAP_FAILED) {
      std::perror("mmap");
      std::abort();
    }
    producer = static_cast<std::byte*>(a);
    consumer = static_cast<const std::byte*>(b);
  }
};

TwoViews& views() {
  static TwoViews v;
  return v;
}

void report(benchmark::State& state, const zc::Outcome& outcome) {
  if (!zc::passed(outcome)) {
    state.SkipWithError(zc::failure(outcome)->message.c_str());
    return;
  }
  state.counters["offsets"] = static_cast<double>(std::get<zc::Pass>(outcome).offsets_probed);
  state.counters["view_bytes"] = static_cast<double>(state.range(0));
}

void BM_check(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  TwoViews& v = views();
  const std::span<std::byte> producer(v.producer, size);
  const std::span<const std::byte> consumer(v.consumer, size);
  zc::Outcome outcome = zc::Pass{0};
  for (auto _ : state) {
    outcome = zc::check(producer, consumer);
    benchmark::DoNotOptimize(outcome);
  }
  report(state, outcome);
}

void BM_check_fn(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  TwoViews& v = views();
  const std::span<std::byte> producer(v.producer, size);
  const std::byte* consumer = v.consumer;
  // The cheapest honest read function: volatile loads of the second mapping.
  const zc::ReadFn read = [consumer](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = *reinterpret_cast<const volatile std::byte*>(consumer + offset + i);
    }
    return out.size();
  };
  zc::Outcome outcome = zc::Pass{0};
  for (auto _ : state) {
    outcome = zc::check_fn(producer, read);
    benchmark::DoNotOptimize(outcome);
  }
  report(state, outcome);
}

BENCHMARK(BM_check)->Arg(4 << 10)->Arg(1 << 30);
BENCHMARK(BM_check_fn)->Arg(4 << 10)->Arg(1 << 30);

}  // namespace

BENCHMARK_MAIN();
