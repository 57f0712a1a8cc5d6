// A stand-in for libcuda.so.1 in the CUDA loader tests: a real shared library
// that exports every entry point of EXTMEM_CUDA_SYMBOLS except
// cuMemExportToShareableHandle, so dlopen() succeeds and exactly one dlsym()
// fails. The stubs are never called (the loader stops at the missing symbol).
// Built as a .cc file so the tests/programs/*.cpp executable glob skips it.
#include "cuda/symbol_list.h"

// Renamed before the list expands: the real name is then absent from the library.
#define cuMemExportToShareableHandle extmem_fake_cuda_not_exported
#define EXTMEM_FAKE_CUDA_STUB(plain, symbol) \
  extern "C" int symbol() { return 999; }
EXTMEM_CUDA_SYMBOLS(EXTMEM_FAKE_CUDA_STUB)
