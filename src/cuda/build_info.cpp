// What this build knows about CUDA: the rows are always built, since the
// driver API they call is declared in cuda_api.h; whether they run depends
// only on libcuda.so.1 at run time.
#include "extmem/cuda/enumerate.h"

#include <string>

namespace extmem::cuda {

bool routes_built() noexcept { return true; }

std::string build_note() { return "CUDA routes built (libcuda.so.1 loaded at run time)"; }

}  // namespace extmem::cuda
