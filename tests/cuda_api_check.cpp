// Compile-time check of src/cuda/cuda_api.h against NVIDIA's cuda.h, built
// only where cuda.h exists at build time (tests/CMakeLists.txt). Compiling
// this file is the test: a constant, a struct layout, an enum's underlying
// type or a function type that differs from cuda.h's stops the build.
//
// Our header comes first, and the constants cuda.h defines as macros are
// copied out before cuda.h is included: afterwards its macros would rewrite
// those names (and the plain function names) wherever they appear.
#include <cstddef>
#include <type_traits>

#include "cuda/cuda_api.h"
#include "cuda/symbol_list.h"

namespace ours = extmem::cudrv;

namespace {
constexpr unsigned int kOurDeviceMap = ours::CU_MEMHOSTREGISTER_DEVICEMAP;
constexpr unsigned int kOurDedicated = ours::CUDA_EXTERNAL_MEMORY_DEDICATED;
constexpr unsigned int kOurColorAttachment = ours::CUDA_ARRAY3D_COLOR_ATTACHMENT;
constexpr std::size_t kOurIpcHandleSize = ours::CU_IPC_HANDLE_SIZE;
}  // namespace

#include <cuda.h>

namespace {

// The cuda.h type that stands where `T` (one of ours) stands, recursively
// through pointers, const and function types; types we share (int, size_t,
// unsigned long long, void) map to themselves.
template <typename T>
struct Theirs {
  using type = T;
};
template <typename T>
using theirs_t = typename Theirs<T>::type;
template <typename T>
struct Theirs<T*> {
  using type = theirs_t<T>*;
};
template <typename T>
struct Theirs<const T> {
  using type = const theirs_t<T>;
};
template <typename R, typename... A>
struct Theirs<R(A...)> {
  using type = theirs_t<R>(theirs_t<A>...);
};
#define EXTMEM_SAME_TYPE(name)        \
  template <>                         \
  struct Theirs<ours::name> {         \
    using type = ::name;              \
  };
EXTMEM_SAME_TYPE(CUresult)
EXTMEM_SAME_TYPE(CUuuid)
EXTMEM_SAME_TYPE(CUctx_st)
EXTMEM_SAME_TYPE(CUextMemory_st)
EXTMEM_SAME_TYPE(CUevent_st)
EXTMEM_SAME_TYPE(CUstream_st)
EXTMEM_SAME_TYPE(CUextSemaphore_st)
EXTMEM_SAME_TYPE(CUmod_st)
EXTMEM_SAME_TYPE(CUfunc_st)
EXTMEM_SAME_TYPE(CUexternalSemaphoreHandleType)
EXTMEM_SAME_TYPE(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC)
EXTMEM_SAME_TYPE(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS)
EXTMEM_SAME_TYPE(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS)
EXTMEM_SAME_TYPE(CUdevice_attribute)
EXTMEM_SAME_TYPE(CUexternalMemoryHandleType)
EXTMEM_SAME_TYPE(CUDA_EXTERNAL_MEMORY_HANDLE_DESC)
EXTMEM_SAME_TYPE(CUDA_EXTERNAL_MEMORY_BUFFER_DESC)
EXTMEM_SAME_TYPE(CUmemLocationType)
EXTMEM_SAME_TYPE(CUmemAllocationType)
EXTMEM_SAME_TYPE(CUmemAllocationHandleType)
EXTMEM_SAME_TYPE(CUmemAccess_flags)
EXTMEM_SAME_TYPE(CUmemAllocationGranularity_flags)
EXTMEM_SAME_TYPE(CUmemLocation)
EXTMEM_SAME_TYPE(CUmemAllocationProp)
EXTMEM_SAME_TYPE(CUmemAccessDesc)
EXTMEM_SAME_TYPE(CUarray_st)
EXTMEM_SAME_TYPE(CUmipmappedArray_st)
EXTMEM_SAME_TYPE(CUarray_format)
EXTMEM_SAME_TYPE(CUDA_ARRAY3D_DESCRIPTOR)
EXTMEM_SAME_TYPE(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC)
EXTMEM_SAME_TYPE(CUmemorytype)
EXTMEM_SAME_TYPE(CUDA_MEMCPY2D)
EXTMEM_SAME_TYPE(CUipcMemHandle)
EXTMEM_SAME_TYPE(CUipcEventHandle)
#undef EXTMEM_SAME_TYPE

// Plain aliases must be the very same types.
static_assert(std::is_same_v<ours::CUdevice, ::CUdevice>);
static_assert(std::is_same_v<ours::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<ours::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>);
static_assert(std::is_same_v<theirs_t<ours::CUcontext>, ::CUcontext>);
static_assert(std::is_same_v<theirs_t<ours::CUexternalMemory>, ::CUexternalMemory>);
static_assert(std::is_same_v<theirs_t<ours::CUevent>, ::CUevent>);
static_assert(std::is_same_v<theirs_t<ours::CUexternalSemaphore>, ::CUexternalSemaphore>);
static_assert(std::is_same_v<theirs_t<ours::CUstream>, ::CUstream>);
static_assert(std::is_same_v<theirs_t<ours::CUarray>, ::CUarray>);
static_assert(std::is_same_v<theirs_t<ours::CUmipmappedArray>, ::CUmipmappedArray>);
static_assert(std::is_same_v<theirs_t<ours::CUmodule>, ::CUmodule>);
static_assert(std::is_same_v<theirs_t<ours::CUfunction>, ::CUfunction>);

// Enums: same size and underlying type, and every enumerator we declare has cuda.h's value.
#define EXTMEM_SAME_ENUM(name)                                                                   \
  static_assert(sizeof(ours::name) == sizeof(::name), #name);                                    \
  static_assert(std::is_same_v<std::underlying_type_t<ours::name>, std::underlying_type_t<::name>>, #name);
EXTMEM_SAME_ENUM(CUresult)
EXTMEM_SAME_ENUM(CUdevice_attribute)
EXTMEM_SAME_ENUM(CUexternalMemoryHandleType)
EXTMEM_SAME_ENUM(CUexternalSemaphoreHandleType)
EXTMEM_SAME_ENUM(CUmemLocationType)
EXTMEM_SAME_ENUM(CUmemAllocationType)
EXTMEM_SAME_ENUM(CUmemAllocationHandleType)
EXTMEM_SAME_ENUM(CUmemAccess_flags)
EXTMEM_SAME_ENUM(CUmemAllocationGranularity_flags)
EXTMEM_SAME_ENUM(CUarray_format)
EXTMEM_SAME_ENUM(CUmemorytype)
#undef EXTMEM_SAME_ENUM

#define EXTMEM_SAME_VALUE(name) static_assert(static_cast<long long>(ours::name) == static_cast<long long>(::name), #name);
EXTMEM_SAME_VALUE(CUDA_SUCCESS)
EXTMEM_SAME_VALUE(CUDA_ERROR_INVALID_VALUE)
EXTMEM_SAME_VALUE(CUDA_ERROR_NOT_READY)
EXTMEM_SAME_VALUE(CUDA_ERROR_NOT_SUPPORTED)
EXTMEM_SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY)
EXTMEM_SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED)
EXTMEM_SAME_VALUE(CUDA_ERROR_DEINITIALIZED)
EXTMEM_SAME_VALUE(CUDA_ERROR_STUB_LIBRARY)
EXTMEM_SAME_VALUE(CUDA_ERROR_DEVICE_UNAVAILABLE)
EXTMEM_SAME_VALUE(CUDA_ERROR_NO_DEVICE)
EXTMEM_SAME_VALUE(CUDA_ERROR_INVALID_DEVICE)
EXTMEM_SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT)
EXTMEM_SAME_VALUE(CUDA_ERROR_INVALID_HANDLE)
EXTMEM_SAME_VALUE(CUDA_ERROR_NOT_FOUND)
EXTMEM_SAME_VALUE(CUDA_ERROR_ILLEGAL_ADDRESS)
EXTMEM_SAME_VALUE(CUDA_ERROR_NOT_PERMITTED)
EXTMEM_SAME_VALUE(CUDA_ERROR_SYSTEM_NOT_READY)
EXTMEM_SAME_VALUE(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
EXTMEM_SAME_VALUE(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
EXTMEM_SAME_VALUE(CUDA_ERROR_UNKNOWN)
EXTMEM_SAME_VALUE(CU_AD_FORMAT_UNSIGNED_INT8)
EXTMEM_SAME_VALUE(CU_MEMORYTYPE_HOST)
EXTMEM_SAME_VALUE(CU_MEMORYTYPE_DEVICE)
EXTMEM_SAME_VALUE(CU_MEMORYTYPE_ARRAY)
EXTMEM_SAME_VALUE(CU_STREAM_NON_BLOCKING)
EXTMEM_SAME_VALUE(CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD)
EXTMEM_SAME_VALUE(CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD)
EXTMEM_SAME_VALUE(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED)
EXTMEM_SAME_VALUE(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
EXTMEM_SAME_VALUE(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
EXTMEM_SAME_VALUE(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
EXTMEM_SAME_VALUE(CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD)
EXTMEM_SAME_VALUE(CU_MEM_LOCATION_TYPE_DEVICE)
EXTMEM_SAME_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED)
EXTMEM_SAME_VALUE(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
EXTMEM_SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
EXTMEM_SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_MINIMUM)
EXTMEM_SAME_VALUE(CU_EVENT_DEFAULT)
EXTMEM_SAME_VALUE(CU_EVENT_DISABLE_TIMING)
EXTMEM_SAME_VALUE(CU_EVENT_INTERPROCESS)
EXTMEM_SAME_VALUE(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
EXTMEM_SAME_VALUE(CU_STREAM_WAIT_VALUE_GEQ)
EXTMEM_SAME_VALUE(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)
EXTMEM_SAME_VALUE(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED)
EXTMEM_SAME_VALUE(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)
EXTMEM_SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
#undef EXTMEM_SAME_VALUE
// The cuda.h macros, against the copies taken before cuda.h was included.
static_assert(kOurDeviceMap == CU_MEMHOSTREGISTER_DEVICEMAP);
static_assert(kOurDedicated == CUDA_EXTERNAL_MEMORY_DEDICATED);
static_assert(kOurColorAttachment == CUDA_ARRAY3D_COLOR_ATTACHMENT);
static_assert(kOurIpcHandleSize == CU_IPC_HANDLE_SIZE);

// Structs: size, alignment, and the offset of every field (nested ones too).
#define EXTMEM_SAME_SHAPE(name)                                   \
  static_assert(sizeof(ours::name) == sizeof(::name), #name);      \
  static_assert(alignof(ours::name) == alignof(::name), #name);
#define EXTMEM_SAME_FIELD(name, field) \
  static_assert(offsetof(ours::name, field) == offsetof(::name, field), #name "." #field);
#define EXTMEM_SAME_FIELD_SIZE(name, field) \
  static_assert(sizeof(ours::name::field) == sizeof(::name::field), #name "." #field);
EXTMEM_SAME_SHAPE(CUuuid)
EXTMEM_SAME_FIELD(CUuuid, bytes)
EXTMEM_SAME_FIELD_SIZE(CUuuid, bytes)

EXTMEM_SAME_SHAPE(CUDA_EXTERNAL_MEMORY_HANDLE_DESC)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, type)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.fd)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.win32.handle)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.win32.name)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle.nvSciBufObject)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, flags)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, reserved)
EXTMEM_SAME_FIELD_SIZE(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle)
EXTMEM_SAME_FIELD_SIZE(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, reserved)

EXTMEM_SAME_SHAPE(CUDA_EXTERNAL_MEMORY_BUFFER_DESC)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_BUFFER_DESC, offset)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_BUFFER_DESC, size)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_BUFFER_DESC, flags)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_BUFFER_DESC, reserved)
EXTMEM_SAME_FIELD_SIZE(CUDA_EXTERNAL_MEMORY_BUFFER_DESC, reserved)

EXTMEM_SAME_SHAPE(CUmemLocation)
EXTMEM_SAME_FIELD(CUmemLocation, type)
EXTMEM_SAME_FIELD(CUmemLocation, id)

EXTMEM_SAME_SHAPE(CUmemAllocationProp)
EXTMEM_SAME_FIELD(CUmemAllocationProp, type)
EXTMEM_SAME_FIELD(CUmemAllocationProp, requestedHandleTypes)
EXTMEM_SAME_FIELD(CUmemAllocationProp, location)
EXTMEM_SAME_FIELD(CUmemAllocationProp, win32HandleMetaData)
EXTMEM_SAME_FIELD(CUmemAllocationProp, allocFlags)
EXTMEM_SAME_FIELD(CUmemAllocationProp, allocFlags.compressionType)
EXTMEM_SAME_FIELD(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable)
EXTMEM_SAME_FIELD(CUmemAllocationProp, allocFlags.usage)
EXTMEM_SAME_FIELD(CUmemAllocationProp, allocFlags.reserved)
EXTMEM_SAME_FIELD_SIZE(CUmemAllocationProp, allocFlags)

EXTMEM_SAME_SHAPE(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, type)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle.fd)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, flags)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, reserved)
EXTMEM_SAME_FIELD_SIZE(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle)

EXTMEM_SAME_SHAPE(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, params.fence.value)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, params.nvSciSync)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, params.keyedMutex.key)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, params.reserved)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, flags)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, reserved)
EXTMEM_SAME_FIELD_SIZE(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, params)

EXTMEM_SAME_SHAPE(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.fence.value)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.nvSciSync)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.keyedMutex.key)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.keyedMutex.timeoutMs)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.reserved)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, flags)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, reserved)
EXTMEM_SAME_FIELD_SIZE(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params)

EXTMEM_SAME_SHAPE(CUipcMemHandle)
EXTMEM_SAME_FIELD_SIZE(CUipcMemHandle, reserved)
EXTMEM_SAME_SHAPE(CUipcEventHandle)
EXTMEM_SAME_FIELD_SIZE(CUipcEventHandle, reserved)

EXTMEM_SAME_SHAPE(CUmemAccessDesc)
EXTMEM_SAME_FIELD(CUmemAccessDesc, location)
EXTMEM_SAME_FIELD(CUmemAccessDesc, flags)

EXTMEM_SAME_SHAPE(CUDA_ARRAY3D_DESCRIPTOR)
EXTMEM_SAME_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Width)
EXTMEM_SAME_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Height)
EXTMEM_SAME_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Depth)
EXTMEM_SAME_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Format)
EXTMEM_SAME_FIELD(CUDA_ARRAY3D_DESCRIPTOR, NumChannels)
EXTMEM_SAME_FIELD(CUDA_ARRAY3D_DESCRIPTOR, Flags)

EXTMEM_SAME_SHAPE(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, offset)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, arrayDesc)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, numLevels)
EXTMEM_SAME_FIELD(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, reserved)
EXTMEM_SAME_FIELD_SIZE(CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, reserved)

EXTMEM_SAME_SHAPE(CUDA_MEMCPY2D)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, srcXInBytes)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, srcY)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, srcMemoryType)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, srcHost)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, srcDevice)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, srcArray)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, srcPitch)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, dstXInBytes)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, dstY)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, dstMemoryType)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, dstHost)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, dstDevice)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, dstArray)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, dstPitch)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, WidthInBytes)
EXTMEM_SAME_FIELD(CUDA_MEMCPY2D, Height)
#undef EXTMEM_SAME_SHAPE
#undef EXTMEM_SAME_FIELD
#undef EXTMEM_SAME_FIELD_SIZE

// Every entry point of the list: our function type, with our types replaced by
// cuda.h's, is exactly the type cuda.h declares for the exported symbol.
#define EXTMEM_SAME_FUNCTION(plain, symbol) \
  static_assert(std::is_same_v<theirs_t<ours::fn::symbol>, decltype(::symbol)>, #symbol);
EXTMEM_CUDA_SYMBOLS(EXTMEM_SAME_FUNCTION)
#undef EXTMEM_SAME_FUNCTION

}  // namespace
