// --measure figures of the CUDA legs (cudaimport, cudahost), in the same JSON
// fields as the Vulkan legs (probe/measure.h), so the text line and `extmem
// report` read them unchanged. Issue 6.
#pragma once

#include <cstddef>
#include <string>

#include "cuda/api.h"
#include "probe/worker/child_context.h"

namespace extmem::probe {

/// GPU copy bandwidth of leg `leg` through `shared` (device address of the
/// shared allocation's first `bytes`): measure::copy_leg() with each copy a
/// cuMemcpyDtoD of `bytes` between `shared` and a cuMemAlloc buffer
/// (gpu_out_gbps, gpu_in_gbps), and between two cuMemAlloc buffers
/// (gpu_baseline_gbps). A sample starts after a cuCtxSynchronize and is timed
/// on the GPU by cuEventElapsedTime between events recorded on the default
/// stream before and after its copies (clock "cuda-event"); when an event
/// cannot be created, by wall clock through a final cuCtxSynchronize (clock
/// "wall", leg.gpu_clock_fallback says why). Copies on the default stream run
/// one after another. The shared
/// bytes are saved to a third cuMemAlloc buffer and put back. A failing
/// cuMemAlloc is noted as leg.gpu_error ("partner buffer: cuMemAlloc(N bytes)
/// -> CUDA_ERROR_…"). The current context must be the device's. Does nothing
/// unless measure::enabled().
void cuda_copy_leg(ChildContext& ctx, const cuda::Api& api, const std::string& leg, CUdeviceptr shared,
                   std::size_t bytes);

}  // namespace extmem::probe
