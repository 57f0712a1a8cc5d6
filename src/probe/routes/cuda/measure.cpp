#include "probe/routes/cuda/measure.h"

#include <memory>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {

void cuda_copy_leg(ChildContext& ctx, const cuda::Api& api, const std::string& leg, CUdeviceptr shared,
                   std::size_t bytes) {
  if (!measure::enabled() || bytes == 0) return;
  ctx.step(fmt::format("measure CUDA GPU copy bandwidth through {}", leg));
  std::unique_ptr<cuda::DeviceBuffer> keep, partner, second;
  for (auto* b : {&keep, &partner, &second}) {
    auto a = cuda::DeviceBuffer::allocate(api, bytes);
    if (!a) {
      if (LegFigures* m = measure::leg(leg)) m->gpu.error = "partner buffer: " + measure::step_and_code(a.error());
      return;
    }
    *b = std::move(*a);
  }
  // Two events on the default stream time the copies on the GPU; an event that cannot be made
  // leaves the wall clock, labelled.
  CUevent start = nullptr, end = nullptr;
  if (CUresult r = api.cuEventCreate(&start, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
    start = nullptr;
    if (LegFigures* m = measure::leg(leg)) m->gpu_clock_fallback = why_of(cuda::cu_error(api, "cuEventCreate", r));
  } else if (CUresult r2 = api.cuEventCreate(&end, CU_EVENT_DEFAULT); r2 != CUDA_SUCCESS) {
    end = nullptr;
    if (LegFigures* m = measure::leg(leg)) m->gpu_clock_fallback = why_of(cuda::cu_error(api, "cuEventCreate", r2));
  }
  struct EventGuard {
    const cuda::Api& api;
    CUevent& e;
    ~EventGuard() {
      if (e != nullptr) (void)api.cuEventDestroy(e);
    }
  } start_guard{api, start}, end_guard{api, end};
  const bool events = start != nullptr && end != nullptr;
  auto seconds = [&](CUdeviceptr src, CUdeviceptr dst, unsigned copies) -> Result<measure::Timed> {
    // Nothing queued before the sample may count in it.
    if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS) return cuda::cu_error(api, "cuCtxSynchronize", r);
    const double t0 = os::monotonic_seconds();
    if (events)
      if (CUresult r = api.cuEventRecord(start, nullptr); r != CUDA_SUCCESS) return cuda::cu_error(api, "cuEventRecord", r);
    for (unsigned c = 0; c < copies; ++c)
      if (CUresult r = api.cuMemcpyDtoD(dst, src, bytes); r != CUDA_SUCCESS)
        return cuda::cu_error(api, "cuMemcpyDtoD", r);
    if (events)
      if (CUresult r = api.cuEventRecord(end, nullptr); r != CUDA_SUCCESS) return cuda::cu_error(api, "cuEventRecord", r);
    if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS) return cuda::cu_error(api, "cuCtxSynchronize", r);
    const double wall = os::monotonic_seconds() - t0;
    if (!events) return measure::Timed{wall, measure::clocks::wall};
    float ms = 0;
    if (CUresult r = api.cuEventElapsedTime(&ms, start, end); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuEventElapsedTime", r);
    return measure::Timed{static_cast<double>(ms) * 1e-3, measure::clocks::cuda_event};
  };
  measure::copy_leg(leg, bytes, true, [&](measure::Copy c, unsigned n) -> Result<measure::Timed> {
    switch (c) {
      case measure::Copy::save: return seconds(shared, keep->ptr(), n);
      case measure::Copy::out: return seconds(shared, partner->ptr(), n);
      case measure::Copy::in: return seconds(partner->ptr(), shared, n);
      case measure::Copy::baseline: return seconds(partner->ptr(), second->ptr(), n);
      case measure::Copy::restore: return seconds(keep->ptr(), shared, n);
    }
    return Error{"measure", ErrorKind::invalid_argument, {}, "unknown copy"};
  });
}

}  // namespace extmem::probe
