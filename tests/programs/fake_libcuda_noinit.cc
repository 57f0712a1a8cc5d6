// A stand-in for libcuda.so.1 that exports every entry point of
// EXTMEM_CUDA_SYMBOLS (so the loader succeeds) and whose cuInit returns the
// CUresult in the environment variable EXTMEM_FAKE_CUINIT_RESULT (decimal;
// CUDA_ERROR_NO_DEVICE, 100, when unset or not a number), like the CUDA
// toolkit's stub library (34) or a machine without a GPU (100). Every other
// entry point returns 999 and writes nothing, cuGetErrorName included, as the
// stub's does, so the probe must name the code itself.
// Built as a .cc file so the tests/programs/*.cpp executable glob skips it.
#include <cstdlib>

#include "cuda/symbol_list.h"

// Renamed before the list expands, then defined below with its real name.
#define cuInit extmem_fake_cuda_generic_cuinit
#define EXTMEM_FAKE_CUDA_STUB(plain, symbol) \
  extern "C" int symbol() { return 999; }
EXTMEM_CUDA_SYMBOLS(EXTMEM_FAKE_CUDA_STUB)
#undef cuInit

extern "C" unsigned cuInit(unsigned /*flags*/) {
  const char* v = std::getenv("EXTMEM_FAKE_CUINIT_RESULT");
  char* end = nullptr;
  const unsigned long r = v != nullptr ? std::strtoul(v, &end, 10) : 0;
  return v != nullptr && end != v && *end == '\0' ? static_cast<unsigned>(r) : 100u;
}
