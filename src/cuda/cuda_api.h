// The part of the CUDA driver API the CUDA rows call, declared by the project
// so that every build has the rows: no cuda.h is needed at build time, and
// libcuda.so.1 is still opened with dlopen() at run time (loader.h). Only what
// the rows use is here: handle and integer types, the enumerators they pass
// or compare, the structs they fill, and one function type per entry point of
// symbol_list.h, named by the exported (versioned) symbol.
//
// These are ABI facts of the driver (Linux, 64-bit), not choices: values,
// layouts and signatures must equal those of NVIDIA's cuda.h. Where cuda.h is
// present at build time, tests/cuda_api_check.cpp compares every constant,
// every struct's size and field offsets, every enum's underlying type and
// every function type with cuda.h's, at compile time.
//
// The declarations live in extmem::cudrv and are made visible in all of
// namespace extmem (the using-directive at the end), so the CUDA code reads
// like code written against cuda.h (CUresult, CUDA_SUCCESS) while a file can
// still include cuda.h beside this one without a clash (the check does).
#pragma once

#include <cstddef>

namespace extmem::cudrv {

/// A driver call's status. The rows compare only with CUDA_SUCCESS and print
/// any other value by cuGetErrorName, or by cuda::known_error_name() (the
/// values below) when that fails, as the toolkit's stub library's does; the
/// cuInit values are what cuda::no_usable_cuda() classifies. The fixed underlying type makes every
/// value the driver returns a valid CUresult.
enum CUresult : unsigned int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,      ///< cuInit: the library is the toolkit's link-time stub, not a driver
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,  ///< cuInit: every device is busy or prohibited (compute mode)
  CUDA_ERROR_NO_DEVICE = 100,        ///< cuInit: the driver found no CUDA device
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,  ///< cuStreamQuery: work on the stream has not completed (S1-cuda-semaphore's poll)
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,  ///< the driver does not do what was asked here (T4-image-cuda: UNSUPPORTED, not FAIL)
  CUDA_ERROR_SYSTEM_NOT_READY = 802,        ///< cuInit: the system is not ready (e.g. fabric manager not running)
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,  ///< cuInit: libcuda and the kernel driver are different versions
  CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,  ///< cuInit: forward-compatibility libcuda on a device without it
  CUDA_ERROR_UNKNOWN = 999,
};

using CUdevice = int;                          ///< a device ordinal's handle (cuDeviceGet)
using CUdeviceptr = unsigned long long;        ///< a device virtual address, bytes
using CUmemGenericAllocationHandle = unsigned long long;  ///< a cuMemCreate/import handle

struct CUctx_st;  ///< opaque, owned by the driver
using CUcontext = CUctx_st*;
struct CUextMemory_st;  ///< opaque, owned by the driver
using CUexternalMemory = CUextMemory_st*;
struct CUevent_st;  ///< opaque, owned by the driver (cuEventCreate/cuEventDestroy)
using CUevent = CUevent_st*;
struct CUstream_st;  ///< opaque, owned by the driver (cuStreamCreate); the null stream is the default one
using CUstream = CUstream_st*;
/// cuEventCreate flags: 0 (CU_EVENT_DEFAULT) keeps timing on, which --measure needs.
inline constexpr unsigned int CU_EVENT_DEFAULT = 0x0;
struct CUextSemaphore_st;  ///< opaque, owned by the driver (cuImportExternalSemaphore)
using CUexternalSemaphore = CUextSemaphore_st*;
struct CUmod_st;  ///< opaque, owned by the driver (cuModuleLoadData/cuModuleUnload)
using CUmodule = CUmod_st*;
struct CUfunc_st;  ///< opaque, owned by its module (cuModuleGetFunction)
using CUfunction = CUfunc_st*;

/// cuEventCreate flags (cuda.h, CUevent_flags): an event another process may
/// open must be created with both (cuIpcGetEventHandle refuses it otherwise).
inline constexpr unsigned int CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr unsigned int CU_EVENT_INTERPROCESS = 0x4;

/// The size in bytes of a legacy IPC handle (cuda.h, CU_IPC_HANDLE_SIZE).
inline constexpr std::size_t CU_IPC_HANDLE_SIZE = 64;
/// cuIpcGetMemHandle's handle of a cuMemAlloc allocation: 64 opaque bytes, no
/// fd; it names the whole allocation (its base), whatever pointer was passed.
struct CUipcMemHandle {
  char reserved[CU_IPC_HANDLE_SIZE];
};
/// cuIpcGetEventHandle's handle of a CU_EVENT_INTERPROCESS event: 64 opaque bytes.
struct CUipcEventHandle {
  char reserved[CU_IPC_HANDLE_SIZE];
};
/// cuIpcOpenMemHandle's only flag value (cuda.h: "Must be specified as
/// CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS"): peer access enabled on first use.
inline constexpr unsigned int CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1;

/// cuStreamWaitValue32 flag (cuda.h, CUstreamWaitValue_flags): wait until
/// (int32_t)(*addr - value) >= 0. T1-cuda-ipc's producer gate.
inline constexpr unsigned int CU_STREAM_WAIT_VALUE_GEQ = 0x0;

/// cuStreamCreate flag: the stream does not synchronise with the legacy default stream.
inline constexpr unsigned int CU_STREAM_NON_BLOCKING = 0x1;

/// The kind of semaphore handle cuImportExternalSemaphore receives (S1-cuda-semaphore:
/// a Vulkan binary semaphore's opaque fd, or a timeline semaphore's).
enum CUexternalSemaphoreHandleType : unsigned int {
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD = 1,
  CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD = 9,
};

/// What cuImportExternalSemaphore imports: handle.fd is the fd, owned by the
/// driver once the import succeeds; flags and reserved zero.
struct CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
  CUexternalSemaphoreHandleType type;
  union {
    int fd;
    struct {
      void* handle;
      const void* name;
    } win32;
    const void* nvSciSyncObj;
  } handle;
  unsigned int flags;
  unsigned int reserved[16];
};

/// cuSignalExternalSemaphoresAsync's parameters: params.fence.value is the
/// timeline value to signal (ignored for a binary semaphore); the rest zero.
struct CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS {
  struct {
    struct {
      unsigned long long value;
    } fence;
    union {
      void* fence;
      unsigned long long reserved;
    } nvSciSync;
    struct {
      unsigned long long key;
    } keyedMutex;
    unsigned int reserved[12];
  } params;
  unsigned int flags;
  unsigned int reserved[16];
};

/// cuWaitExternalSemaphoresAsync's parameters: params.fence.value is the
/// timeline value to wait for (ignored for a binary semaphore); the rest zero.
struct CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS {
  struct {
    struct {
      unsigned long long value;
    } fence;
    union {
      void* fence;
      unsigned long long reserved;
    } nvSciSync;
    struct {
      unsigned long long key;
      unsigned int timeoutMs;
    } keyedMutex;
    unsigned int reserved[10];
  } params;
  unsigned int flags;
  unsigned int reserved[16];
};

/// The 16 bytes of cuDeviceGetUuid (the same value as Vulkan's deviceUUID).
struct CUuuid {
  char bytes[16];
};

/// cuDeviceGetAttribute queries the rows make (values 0 or 1 for these).
enum CUdevice_attribute : unsigned int {
  CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 99,
  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116,  ///< phase A only: GPUDirect RDMA (nvidia_p2p_get_pages)
  CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
  CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED = 125,  ///< cuIpcGetEventHandle works here (T1-cuda-ipc's ipcevent leg)
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 128,  ///< phase A only: CU_MEM_HANDLE_TYPE_FABRIC exports
};

/// cuMemHostRegister flag: give the registered range a device address.
inline constexpr unsigned int CU_MEMHOSTREGISTER_DEVICEMAP = 0x02;

/// The kind of handle cuImportExternalMemory receives (T1-opaque-fd-cuda: a Vulkan opaque fd).
enum CUexternalMemoryHandleType : unsigned int {
  CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1,
};

/// CUDA_EXTERNAL_MEMORY_HANDLE_DESC::flags bit: the exporter allocated the memory dedicated.
inline constexpr unsigned int CUDA_EXTERNAL_MEMORY_DEDICATED = 0x1;

/// What cuImportExternalMemory imports. For OPAQUE_FD, handle.fd is the fd,
/// which the driver owns once the import succeeds; size in bytes; reserved zero.
struct CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
  CUexternalMemoryHandleType type;
  union {
    int fd;
    struct {
      void* handle;
      const void* name;
    } win32;
    const void* nvSciBufObject;
  } handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};

/// The range of an imported allocation cuExternalMemoryGetMappedBuffer maps:
/// offset and size in bytes from the allocation's start; flags and reserved zero.
struct CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};

struct CUarray_st;  ///< opaque, owned by the driver (a level of a mapped mipmapped array, or cuArray3DCreate's)
using CUarray = CUarray_st*;
struct CUmipmappedArray_st;  ///< opaque, owned by the driver (cuExternalMemoryGetMappedMipmappedArray)
using CUmipmappedArray = CUmipmappedArray_st*;

/// The element type of a CUDA array's channels (T4-image-cuda: R8G8B8A8_UNORM
/// is four unsigned 8-bit channels).
enum CUarray_format : unsigned int {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
};

/// CUDA_ARRAY3D_DESCRIPTOR::Flags bit: the array may be bound as a colour
/// attachment (what an image with VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT must say).
inline constexpr unsigned int CUDA_ARRAY3D_COLOR_ATTACHMENT = 0x20;

/// A CUDA array's shape: Width and Height in elements, Depth 0 for a 2D
/// array, NumChannels 1, 2 or 4 of Format each.
struct CUDA_ARRAY3D_DESCRIPTOR {
  std::size_t Width;
  std::size_t Height;
  std::size_t Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
};

/// What cuExternalMemoryGetMappedMipmappedArray maps: the array at offset
/// bytes into the imported allocation, of arrayDesc's shape with numLevels
/// mip levels; reserved zero.
struct CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC {
  unsigned long long offset;
  CUDA_ARRAY3D_DESCRIPTOR arrayDesc;
  unsigned int numLevels;
  unsigned int reserved[16];
};

/// Where one side of a cuMemcpy2D is.
enum CUmemorytype : unsigned int {
  CU_MEMORYTYPE_HOST = 0x01,    ///< srcHost/dstHost and the pitch
  CU_MEMORYTYPE_DEVICE = 0x02,  ///< srcDevice/dstDevice and the pitch
  CU_MEMORYTYPE_ARRAY = 0x03,   ///< srcArray/dstArray (the pitch is ignored)
};

/// cuMemcpy2D's copy: WidthInBytes x Height from (srcXInBytes, srcY) to
/// (dstXInBytes, dstY); each side is the kind its MemoryType says, the other
/// pointer fields of that side unused (zero). Pitches in bytes.
struct CUDA_MEMCPY2D {
  std::size_t srcXInBytes;
  std::size_t srcY;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  std::size_t srcPitch;
  std::size_t dstXInBytes;
  std::size_t dstY;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  std::size_t dstPitch;
  std::size_t WidthInBytes;
  std::size_t Height;
};

/// Where a cuMemCreate allocation lives or who is granted access to it.
enum CUmemLocationType : unsigned int {
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,  ///< id is a device ordinal
};

enum CUmemAllocationType : unsigned int {
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,  ///< resident device memory, not migrated
};

/// The shareable handle a cuMemCreate allocation may be exported as.
enum CUmemAllocationHandleType : unsigned int {
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,  ///< an fd, passed as (void*)(intptr_t)fd
};

enum CUmemAccess_flags : unsigned int {
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
};

enum CUmemAllocationGranularity_flags : unsigned int {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,      ///< the smallest size and alignment accepted
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1,  ///< the size the driver recommends for performance (phase A)
};

struct CUmemLocation {
  CUmemLocationType type;
  int id;
};

/// cuMemCreate's request. The rows set type, requestedHandleTypes and
/// location; the rest stays zero (no win32 metadata, default flags).
struct CUmemAllocationProp {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

/// One cuMemSetAccess grant: who (location) may do what (flags).
struct CUmemAccessDesc {
  CUmemLocation location;
  CUmemAccess_flags flags;
};

/// One function type per EXTMEM_CUDA_SYMBOLS entry, named by its exported
/// symbol. Sizes are bytes; every call returns a CUresult.
namespace fn {
using cuGetErrorName = CUresult(CUresult error, const char** name);
using cuInit = CUresult(unsigned int flags);
using cuDriverGetVersion = CUresult(int* version);
using cuDeviceGetCount = CUresult(int* count);
using cuDeviceGet = CUresult(CUdevice* device, int ordinal);
using cuDeviceGetName = CUresult(char* name, int length, CUdevice device);
using cuDeviceGetUuid_v2 = CUresult(CUuuid* uuid, CUdevice device);
using cuDeviceGetAttribute = CUresult(int* value, CUdevice_attribute attribute, CUdevice device);
using cuDeviceTotalMem_v2 = CUresult(std::size_t* bytes, CUdevice device);
using cuDevicePrimaryCtxRetain = CUresult(CUcontext* context, CUdevice device);
using cuDevicePrimaryCtxRelease_v2 = CUresult(CUdevice device);
using cuCtxSetCurrent = CUresult(CUcontext context);
using cuCtxSynchronize = CUresult();
using cuMemAlloc_v2 = CUresult(CUdeviceptr* ptr, std::size_t bytes);
using cuMemFree_v2 = CUresult(CUdeviceptr ptr);
using cuMemcpyHtoD_v2 = CUresult(CUdeviceptr dst, const void* src, std::size_t bytes);
using cuMemcpyDtoH_v2 = CUresult(void* dst, CUdeviceptr src, std::size_t bytes);
using cuMemcpyDtoD_v2 = CUresult(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes);
using cuMemsetD32_v2 = CUresult(CUdeviceptr dst, unsigned int value, std::size_t words);
using cuImportExternalMemory = CUresult(CUexternalMemory* memory, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc);
using cuExternalMemoryGetMappedBuffer = CUresult(CUdeviceptr* ptr, CUexternalMemory memory,
                                                 const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* desc);
using cuDestroyExternalMemory = CUresult(CUexternalMemory memory);
using cuExternalMemoryGetMappedMipmappedArray = CUresult(CUmipmappedArray* mipmap, CUexternalMemory memory,
                                                         const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* desc);
using cuMipmappedArrayGetLevel = CUresult(CUarray* level_array, CUmipmappedArray mipmap, unsigned int level);
using cuMipmappedArrayDestroy = CUresult(CUmipmappedArray mipmap);
using cuMemcpy2D_v2 = CUresult(const CUDA_MEMCPY2D* copy);
// T4-image-cuda's --measure figures: a private array of the imported one's
// shape, and array copies queued on a stream (between two events).
using cuArray3DCreate_v2 = CUresult(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc);
using cuArrayDestroy = CUresult(CUarray array);
using cuMemcpy2DAsync_v2 = CUresult(const CUDA_MEMCPY2D* copy, CUstream stream);
using cuMemGetAllocationGranularity = CUresult(std::size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option);
using cuMemCreate = CUresult(CUmemGenericAllocationHandle* handle, std::size_t bytes, const CUmemAllocationProp* prop,
                             unsigned long long flags);
using cuMemRelease = CUresult(CUmemGenericAllocationHandle handle);
using cuMemExportToShareableHandle = CUresult(void* shareable, CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType type, unsigned long long flags);
using cuMemImportFromShareableHandle = CUresult(CUmemGenericAllocationHandle* handle, void* os_handle,
                                                CUmemAllocationHandleType type);
using cuMemAddressReserve = CUresult(CUdeviceptr* ptr, std::size_t bytes, std::size_t alignment, CUdeviceptr hint,
                                     unsigned long long flags);
using cuMemAddressFree = CUresult(CUdeviceptr ptr, std::size_t bytes);
using cuMemMap = CUresult(CUdeviceptr ptr, std::size_t bytes, std::size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags);
using cuMemUnmap = CUresult(CUdeviceptr ptr, std::size_t bytes);
using cuMemSetAccess = CUresult(CUdeviceptr ptr, std::size_t bytes, const CUmemAccessDesc* grants, std::size_t count);
using cuMemHostRegister_v2 = CUresult(void* host, std::size_t bytes, unsigned int flags);
using cuMemHostUnregister = CUresult(void* host);
using cuMemHostGetDevicePointer_v2 = CUresult(CUdeviceptr* ptr, void* host, unsigned int flags);
// Events time GPU work on the GPU's clock (--measure); elapsed time is in milliseconds.
using cuEventCreate = CUresult(CUevent* event, unsigned int flags);
using cuEventRecord = CUresult(CUevent event, CUstream stream);
using cuEventSynchronize = CUresult(CUevent event);
using cuEventElapsedTime_v2 = CUresult(float* milliseconds, CUevent start, CUevent end);
using cuEventDestroy_v2 = CUresult(CUevent event);
using cuImportExternalSemaphore = CUresult(CUexternalSemaphore* semaphore, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* desc);
using cuDestroyExternalSemaphore = CUresult(CUexternalSemaphore semaphore);
using cuSignalExternalSemaphoresAsync = CUresult(const CUexternalSemaphore* semaphores,
                                                 const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params, unsigned int count,
                                                 CUstream stream);
using cuWaitExternalSemaphoresAsync = CUresult(const CUexternalSemaphore* semaphores,
                                               const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* params, unsigned int count,
                                               CUstream stream);
using cuStreamCreate = CUresult(CUstream* stream, unsigned int flags);
using cuStreamDestroy_v2 = CUresult(CUstream stream);
using cuStreamQuery = CUresult(CUstream stream);
using cuMemcpyHtoDAsync_v2 = CUresult(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream);
using cuMemcpyDtoHAsync_v2 = CUresult(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream);
using cuMemAllocHost_v2 = CUresult(void** host, std::size_t bytes);
using cuMemFreeHost = CUresult(void* host);
// Legacy CUDA IPC (T1-cuda-ipc): handles are passed by value.
using cuIpcGetMemHandle = CUresult(CUipcMemHandle* handle, CUdeviceptr ptr);
using cuIpcOpenMemHandle_v2 = CUresult(CUdeviceptr* ptr, CUipcMemHandle handle, unsigned int flags);
using cuIpcCloseMemHandle = CUresult(CUdeviceptr ptr);
using cuIpcGetEventHandle = CUresult(CUipcEventHandle* handle, CUevent event);
using cuIpcOpenEventHandle = CUresult(CUevent* event, CUipcEventHandle handle);
using cuStreamWaitEvent = CUresult(CUstream stream, CUevent event, unsigned int flags);
/// `addr` is a device address of a 32-bit word (pinned host memory's host pointer, with unified addressing).
using cuStreamWaitValue32_v2 = CUresult(CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags);
using cuStreamWriteValue32_v2 = CUresult(CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags);
using cuStreamSynchronize = CUresult(CUstream stream);
/// The allocation holding `ptr`: its base address and size in bytes.
using cuMemGetAddressRange_v2 = CUresult(CUdeviceptr* base, std::size_t* bytes, CUdeviceptr ptr);
/// Loads a module from `image` (here: NUL-terminated PTX text, compiled by the driver's JIT).
using cuModuleLoadData = CUresult(CUmodule* module, const void* image);
using cuModuleUnload = CUresult(CUmodule module);
using cuModuleGetFunction = CUresult(CUfunction* function, CUmodule module, const char* name);
/// Launches `f` on `stream` with a grid and block of (x, y, z) sizes; `params`
/// holds one pointer per kernel parameter, pointing at its value.
using cuLaunchKernel = CUresult(CUfunction f, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                unsigned int shared_bytes, CUstream stream, void** params, void** extra);
}  // namespace fn

}  // namespace extmem::cudrv

namespace extmem {
// Visible as extmem::CUresult etc., so code anywhere in extmem names them as
// cuda.h would; cuda.h's own declarations sit in the global namespace and
// never meet these except in the check, which qualifies both.
using namespace cudrv;
}  // namespace extmem
