#include "probe/routes/cuda/stream_sync.h"

#include <cstdint>
#include <cstring>
#include <thread>

#include "probe/layout.h"
#include "probe/routes/s1/vk_side.h"

namespace extmem::probe::cuda_sync {

Result<sync::Waited> poll_stream(const cuda::Api& api, CUstream stream, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    CUresult r = api.cuStreamQuery(stream);
    if (r == CUDA_SUCCESS) return sync::Waited{sync::WaitResult::signalled, "CUDA_SUCCESS"};
    if (r != CUDA_ERROR_NOT_READY) return cuda::cu_error(api, "cuStreamQuery", r);
    if (std::chrono::steady_clock::now() >= deadline)
      return sync::Waited{sync::WaitResult::timed_out, "CUDA_ERROR_NOT_READY"};
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status copy_out_with_marker(const cuda::Api& api, CUstream stream, void* host, CUdeviceptr region,
                            CUdeviceptr marker) {
  if (CUresult r = api.cuMemcpyDtoHAsync(host, region, kRegionSize, stream); r != CUDA_SUCCESS)
    return cuda::cu_error(api, "cuMemcpyDtoHAsync(region E)", r);
  if (CUresult r = api.cuMemcpyDtoHAsync(static_cast<std::byte*>(host) + kRegionSize, marker, 4, stream);
      r != CUDA_SUCCESS)
    return cuda::cu_error(api, "cuMemcpyDtoHAsync(marker)", r);
  return {};
}

Result<sync::Observation> observe(const cuda::Api& api, CUstream stream, const void* host) {
  sync::Observation o;
  CUresult r = api.cuStreamQuery(stream);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) return cuda::cu_error(api, "cuStreamQuery", r);
  o.fence_signalled = r == CUDA_SUCCESS;
  std::uint32_t m = 0;
  std::memcpy(&m, static_cast<const std::byte*>(host) + kRegionSize, sizeof m);
  o.marker_present = m == s1::kMarker;
  return o;
}

}  // namespace extmem::probe::cuda_sync
