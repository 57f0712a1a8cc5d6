#include "probe/routes/s1/wake.h"

#include <atomic>

#include "extmem/os/clock.h"
#include "probe/worker/measure.h"

namespace extmem::probe::s1 {

double wake_word_seen(void* word, std::uint32_t value, double bound_s) {
  std::atomic_ref<std::uint32_t> w(*static_cast<std::uint32_t*>(word));
  const double deadline = os::monotonic_seconds() + bound_s;
  for (;;) {
    if (w.load(std::memory_order_acquire) == value) return os::monotonic_seconds();
    if (os::monotonic_seconds() > deadline) return 0;
  }
}

void report_gpu_wake(const std::string& clock, std::vector<double> semaphore_us, std::vector<double> socket_us,
                     std::uint64_t max_deviation_ns) {
  measure::route_latency(&RouteFigures::semaphore_gpu_wake_us, std::move(semaphore_us));
  measure::route_latency(&RouteFigures::socket_gpu_wake_us, std::move(socket_us));
  if (RouteFigures* r = measure::route())
    r->gpu_wake_clock = GpuWakeClock{.clock = clock, .time_domain = "CLOCK_MONOTONIC", .max_deviation_ns = max_deviation_ns};
}

void gpu_wake_fallback(ChildContext& ctx, std::string why) {
  ctx.step("measure on the GPU clock: " + why);
  if (RouteFigures* r = measure::route()) r->gpu_clock_fallback = std::move(why);
}

}  // namespace extmem::probe::s1
