#include "cuda/sweep_kernels.h"

#include <algorithm>

#include <fmt/format.h>

#include "cuda/kernels/sweep_words_ptx.h"

namespace extmem::cuda {

Result<std::unique_ptr<SweepKernels>> SweepKernels::load(const Api& api) {
  std::unique_ptr<SweepKernels> k(new SweepKernels(api));
  if (CUresult r = api.cuModuleLoadData(&k->module_, kSweepWordsPtx); r != CUDA_SUCCESS) {
    k->module_ = nullptr;
    return cu_error(api, "cuModuleLoadData(sweep kernels PTX)", r);
  }
  if (CUresult r = api.cuModuleGetFunction(&k->gather_, k->module_, "extmem_gather_words"); r != CUDA_SUCCESS)
    return cu_error(api, "cuModuleGetFunction(extmem_gather_words)", r);
  if (CUresult r = api.cuModuleGetFunction(&k->scatter_, k->module_, "extmem_scatter_words"); r != CUDA_SUCCESS)
    return cu_error(api, "cuModuleGetFunction(extmem_scatter_words)", r);
  return k;
}

SweepKernels::~SweepKernels() {
  if (module_ != nullptr) (void)api_.cuModuleUnload(module_);
}

Status SweepKernels::launch(CUfunction f, CUdeviceptr a, CUdeviceptr b, CUdeviceptr offsets, std::size_t n,
                            CUstream stream, const char* what) const {
  constexpr unsigned kBlock = 256;
  // A grid-stride loop: enough blocks to fill any current GPU, each thread a few words.
  const auto blocks = static_cast<unsigned>(std::clamp<std::size_t>((n + kBlock - 1) / kBlock, 1, 1024));
  unsigned long long count = n;
  void* params[] = {&a, &b, &offsets, &count};
  if (CUresult r = api_.cuLaunchKernel(f, blocks, 1, 1, kBlock, 1, 1, 0, stream, params, nullptr); r != CUDA_SUCCESS)
    return cu_error(api_, fmt::format("cuLaunchKernel({}, {} words)", what, n), r);
  return {};
}

Status SweepKernels::gather(CUdeviceptr out, CUdeviceptr base, CUdeviceptr offsets, std::size_t n, CUstream stream) const {
  return launch(gather_, out, base, offsets, n, stream, "gather");
}

Status SweepKernels::scatter(CUdeviceptr base, CUdeviceptr in, CUdeviceptr offsets, std::size_t n, CUstream stream) const {
  return launch(scatter_, base, in, offsets, n, stream, "scatter");
}

}  // namespace extmem::cuda
