#include "probe/routes/cuda_measure.h"

#include <memory>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "probe/worker/measure.h"

namespace extmem::probe {

void cuda_copy_leg(ChildContext& ctx, const cuda::Api& api, const std::string& leg, CUdeviceptr shared,
                   std::size_t bytes) {
  if (!measure::enabled() || bytes == 0) return;
  ctx.step(fmt::format("measure CUDA GPU copy bandwidth through {}", leg));
  std::unique_ptr<cuda::DeviceBuffer> keep, partner, second;
  for (auto* b : {&keep, &partner, &second}) {
    auto a = cuda::DeviceBuffer::allocate(api, bytes);
    if (!a) {
      measure::leg_field(leg, "gpu_error", fmt::format("partner buffer: {} -> {}", a.error().step, a.error().code));
      return;
    }
    *b = std::move(*a);
  }
  auto seconds = [&](CUdeviceptr src, CUdeviceptr dst, unsigned copies) -> Result<double> {
    // Nothing queued before the sample may count in it.
    if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS) return cuda::cu_error(api, "cuCtxSynchronize", r);
    const double t0 = os::monotonic_seconds();
    for (unsigned c = 0; c < copies; ++c)
      if (CUresult r = api.cuMemcpyDtoD(dst, src, bytes); r != CUDA_SUCCESS)
        return cuda::cu_error(api, "cuMemcpyDtoD", r);
    if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS) return cuda::cu_error(api, "cuCtxSynchronize", r);
    return os::monotonic_seconds() - t0;
  };
  measure::copy_leg(leg, bytes, true, [&](measure::Copy c, unsigned n) -> Result<double> {
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
