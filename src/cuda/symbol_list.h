// The CUDA driver entry points the probe resolves from libcuda.so.1, as an
// X-macro list: X(plain, symbol) once per entry point.
//
// `symbol` is what the driver exports for the ABI the probe calls: for some
// calls the driver keeps an old ABI under the plain name and exports the
// current one with a suffix (cuMemAlloc's 64-bit sizes are cuMemAlloc_v2,
// cuDeviceGetUuid's current form is cuDeviceGetUuid_v2), so the list names
// the suffixed symbol, and cuda_api.h declares each function type under that
// same name (cudrv::fn::cuMemAlloc_v2). `plain` is the name call sites use:
// the typed table in api.h has a field api.cuMemAlloc of type
// cudrv::fn::cuMemAlloc_v2*. No cuda.h is needed to read this list (the
// loader and the tests' fake driver use it too).
#pragma once

#define EXTMEM_CUDA_SYMBOLS(X)                                        \
  X(cuGetErrorName, cuGetErrorName)                                   \
  X(cuInit, cuInit)                                                   \
  X(cuDriverGetVersion, cuDriverGetVersion)                           \
  X(cuDeviceGetCount, cuDeviceGetCount)                               \
  X(cuDeviceGet, cuDeviceGet)                                         \
  X(cuDeviceGetName, cuDeviceGetName)                                 \
  X(cuDeviceGetUuid, cuDeviceGetUuid_v2)                              \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute)                       \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2)                            \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)               \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)          \
  X(cuCtxSetCurrent, cuCtxSetCurrent)                                 \
  X(cuCtxSynchronize, cuCtxSynchronize)                               \
  X(cuMemAlloc, cuMemAlloc_v2)                                        \
  X(cuMemFree, cuMemFree_v2)                                          \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2)                                    \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2)                                    \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2)                                    \
  X(cuMemsetD32, cuMemsetD32_v2)                                      \
  X(cuImportExternalMemory, cuImportExternalMemory)                   \
  X(cuExternalMemoryGetMappedBuffer, cuExternalMemoryGetMappedBuffer) \
  X(cuDestroyExternalMemory, cuDestroyExternalMemory)                 \
  X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity)     \
  X(cuMemCreate, cuMemCreate)                                         \
  X(cuMemRelease, cuMemRelease)                                       \
  X(cuMemExportToShareableHandle, cuMemExportToShareableHandle)       \
  X(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle)   \
  X(cuMemAddressReserve, cuMemAddressReserve)                         \
  X(cuMemAddressFree, cuMemAddressFree)                               \
  X(cuMemMap, cuMemMap)                                               \
  X(cuMemUnmap, cuMemUnmap)                                           \
  X(cuMemSetAccess, cuMemSetAccess)                                   \
  X(cuMemHostRegister, cuMemHostRegister_v2)                          \
  X(cuMemHostUnregister, cuMemHostUnregister)                         \
  X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2)       \
  X(cuEventCreate, cuEventCreate)                                     \
  X(cuEventRecord, cuEventRecord)                                     \
  X(cuEventSynchronize, cuEventSynchronize)                           \
  X(cuEventElapsedTime, cuEventElapsedTime_v2)                        \
  X(cuEventDestroy, cuEventDestroy_v2) \
  X(cuImportExternalSemaphore, cuImportExternalSemaphore)             \
  X(cuDestroyExternalSemaphore, cuDestroyExternalSemaphore)           \
  X(cuSignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync) \
  X(cuWaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync)     \
  X(cuStreamCreate, cuStreamCreate)                                   \
  X(cuStreamDestroy, cuStreamDestroy_v2)                              \
  X(cuStreamQuery, cuStreamQuery)                                     \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2)                          \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2)                          \
  X(cuMemAllocHost, cuMemAllocHost_v2)                                \
  X(cuMemFreeHost, cuMemFreeHost)                                     \
  X(cuExternalMemoryGetMappedMipmappedArray, cuExternalMemoryGetMappedMipmappedArray) \
  X(cuMipmappedArrayGetLevel, cuMipmappedArrayGetLevel)               \
  X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy)                 \
  X(cuMemcpy2D, cuMemcpy2D_v2)                                        \
  X(cuArray3DCreate, cuArray3DCreate_v2)                              \
  X(cuArrayDestroy, cuArrayDestroy)                                   \
  X(cuMemcpy2DAsync, cuMemcpy2DAsync_v2)                              \
  X(cuIpcGetMemHandle, cuIpcGetMemHandle)                             \
  X(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2)                        \
  X(cuIpcCloseMemHandle, cuIpcCloseMemHandle)                         \
  X(cuIpcGetEventHandle, cuIpcGetEventHandle)                         \
  X(cuIpcOpenEventHandle, cuIpcOpenEventHandle)                       \
  X(cuStreamWaitEvent, cuStreamWaitEvent)                             \
  X(cuStreamWaitValue32, cuStreamWaitValue32_v2)                      \
  X(cuStreamWriteValue32, cuStreamWriteValue32_v2)                    \
  X(cuStreamSynchronize, cuStreamSynchronize)                         \
  X(cuMemGetAddressRange, cuMemGetAddressRange_v2)                    \
  X(cuModuleLoadData, cuModuleLoadData)                               \
  X(cuModuleUnload, cuModuleUnload)                                   \
  X(cuModuleGetFunction, cuModuleGetFunction)                         \
  X(cuLaunchKernel, cuLaunchKernel)
