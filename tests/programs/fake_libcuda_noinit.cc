// A stand-in for libcuda.so.1 that exports every entry point of
// EXTMEM_CUDA_SYMBOLS (so the loader succeeds) and whose cuInit returns the
// CUresult in the environment variable EXTMEM_FAKE_CUINIT_RESULT (decimal;
// CUDA_ERROR_NO_DEVICE, 100, when unset or not a number), like the CUDA
// toolkit's stub library (34) or a machine without a GPU (100). Every other
// entry point returns 999 and writes nothing, cuGetErrorName included, as the
// stub's does, so the probe must name the code itself.
// Built as a .cc file so the tests/programs/*.cpp executable glob skips it.
#include <cstdlib>

#include "cuda/cuda_api.h"
#include "cuda/symbol_list.h"

// Renamed before the list expands, then defined below with their real names.
#define cuInit extmem_fake_cuda_generic_cuinit
#define cuGetErrorName extmem_fake_cuda_generic_geterrorname
#define EXTMEM_FAKE_CUDA_STUB(plain, symbol) \
  extern "C" int symbol() { return 999; }
EXTMEM_CUDA_SYMBOLS(EXTMEM_FAKE_CUDA_STUB)
#undef cuInit
#undef cuGetErrorName

// cuInit and cuGetErrorName are the entry points the callers reach here, so
// they have the exact function types they are called through (UBSan's
// -fsanitize=function checks that in CI); the stubs above are never called.
extern "C" extmem::cudrv::CUresult cuInit(unsigned int /*flags*/) {
  const char* v = std::getenv("EXTMEM_FAKE_CUINIT_RESULT");
  char* end = nullptr;
  const unsigned long r = v != nullptr ? std::strtoul(v, &end, 10) : 0;
  return static_cast<extmem::cudrv::CUresult>(v != nullptr && end != v && *end == '\0' ? static_cast<unsigned>(r) : 100u);
}

// As the toolkit's stub: fails and names nothing.
extern "C" extmem::cudrv::CUresult cuGetErrorName(extmem::cudrv::CUresult /*error*/, const char** /*name*/) {
  return static_cast<extmem::cudrv::CUresult>(999u);
}
