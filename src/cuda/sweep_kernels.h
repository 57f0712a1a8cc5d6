// The whole-allocation sweep's gather and scatter as CUDA kernels
// (kernels/sweep_words.cu, embedded as PTX and JIT-compiled by the driver when
// loaded): one launch per pass instead of one cuMemcpyAsync per stamp, which
// cost about a second a pass at 1 GiB (262144 stamps) on NVIDIA 580
// (docs/results/nvidia-h200-580.md, "Whole allocation at 1 GiB").
#pragma once

#include <cstddef>
#include <memory>

#include "cuda/api.h"
#include "extmem/core/error.h"

namespace extmem::cuda {

class SweepKernels {
 public:
  /// Loads the module in the current context. Errors: cu_error of
  /// cuModuleLoadData (a driver older than the PTX, CUDA 13.0, answers
  /// CUDA_ERROR_UNSUPPORTED_PTX_VERSION) or of cuModuleGetFunction.
  static Result<std::unique_ptr<SweepKernels>> load(const Api& api);
  ~SweepKernels();  ///< cuModuleUnload
  SweepKernels(const SweepKernels&) = delete;
  SweepKernels& operator=(const SweepKernels&) = delete;

  /// Queues out[i] := the 8-byte word at base + offsets[i], for i < n, on
  /// `stream`. `out` and `offsets` hold n words; all three are device addresses
  /// (pinned host memory's host pointer is one, with unified addressing); every
  /// offset is 8-byte aligned. Errors: cu_error("cuLaunchKernel(gather)").
  Status gather(CUdeviceptr out, CUdeviceptr base, CUdeviceptr offsets, std::size_t n, CUstream stream) const;
  /// Queues the word at base + offsets[i] := in[i], for i < n, on `stream`.
  /// Errors: cu_error("cuLaunchKernel(scatter)").
  Status scatter(CUdeviceptr base, CUdeviceptr in, CUdeviceptr offsets, std::size_t n, CUstream stream) const;

 private:
  explicit SweepKernels(const Api& api) : api_(api) {}
  Status launch(CUfunction f, CUdeviceptr a, CUdeviceptr b, CUdeviceptr offsets, std::size_t n, CUstream stream,
                const char* what) const;
  const Api& api_;
  CUmodule module_ = nullptr;
  CUfunction gather_ = nullptr;
  CUfunction scatter_ = nullptr;
};

}  // namespace extmem::cuda
