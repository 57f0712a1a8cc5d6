// The CUDA driver entry points the probe resolves from libcuda.so.1, as an
// X-macro list: EXTMEM_CUDA_SYMBOL(name) once per entry point.
//
// Each name is the symbol the driver exports for the ABI the probe calls, which
// is the name cuda.h's version macros map the plain name to (CUDA 13 cuda.h:
// cuMemAlloc -> cuMemAlloc_v2, cuDeviceGetUuid -> cuDeviceGetUuid_v2, ...). The
// list is written with the versioned names on purpose: the typed table in
// api.h declares each field as decltype(&::name), so a name whose prototype
// cuda.h does not declare fails to compile, and calls written with the plain
// name (api.cuMemAlloc) expand to the versioned field through cuda.h's macros.
// No cuda.h is needed to read this list (the loader and the tests' fake driver use it).
#pragma once

#define EXTMEM_CUDA_SYMBOLS(X)            \
  X(cuGetErrorName)                       \
  X(cuInit)                               \
  X(cuDriverGetVersion)                   \
  X(cuDeviceGetCount)                     \
  X(cuDeviceGet)                          \
  X(cuDeviceGetName)                      \
  X(cuDeviceGetUuid_v2)                   \
  X(cuDeviceGetAttribute)                 \
  X(cuDeviceTotalMem_v2)                  \
  X(cuDevicePrimaryCtxRetain)             \
  X(cuDevicePrimaryCtxRelease_v2)         \
  X(cuCtxSetCurrent)                      \
  X(cuCtxSynchronize)                     \
  X(cuMemAlloc_v2)                        \
  X(cuMemFree_v2)                         \
  X(cuMemcpyHtoD_v2)                      \
  X(cuMemcpyDtoH_v2)                      \
  X(cuMemcpyDtoD_v2)                      \
  X(cuMemsetD32_v2)                       \
  X(cuImportExternalMemory)               \
  X(cuExternalMemoryGetMappedBuffer)      \
  X(cuDestroyExternalMemory)              \
  X(cuMemGetAllocationGranularity)        \
  X(cuMemCreate)                          \
  X(cuMemRelease)                         \
  X(cuMemExportToShareableHandle)         \
  X(cuMemImportFromShareableHandle)       \
  X(cuMemAddressReserve)                  \
  X(cuMemAddressFree)                     \
  X(cuMemMap)                             \
  X(cuMemUnmap)                           \
  X(cuMemSetAccess)                       \
  X(cuMemHostRegister_v2)                 \
  X(cuMemHostUnregister)                  \
  X(cuMemHostGetDevicePointer_v2)
