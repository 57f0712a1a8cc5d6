// What this build knows about CUDA; compiled with EXTMEM_HAVE_CUDA when cuda.h was found.
#include "cuda/loader.h"

#ifdef EXTMEM_HAVE_CUDA
#include <cuda.h>
#endif

#include <fmt/format.h>

namespace extmem::cuda {

#ifdef EXTMEM_HAVE_CUDA
bool routes_built() noexcept { return true; }
std::string build_note() {
  return fmt::format("CUDA routes built (cuda.h CUDA_VERSION {}; libcuda.so.1 loaded at run time)", CUDA_VERSION);
}
#else
bool routes_built() noexcept { return false; }
std::string build_note() { return kNotBuiltReason; }
#endif

}  // namespace extmem::cuda
