#include "cuda/api.h"

#include <fmt/format.h>

namespace extmem::cuda {

Result<std::shared_ptr<const Api>> load() {
  auto lib = DriverLibrary::open(driver_library_name());
  if (!lib) return std::move(lib).error();
  auto api = std::make_shared<Api>();
  std::size_t i = 0;
  const auto& syms = (*lib)->symbols();
#define EXTMEM_CUDA_FILL(plain, symbol) api->plain = reinterpret_cast<cudrv::fn::symbol*>(syms[i++]);
  EXTMEM_CUDA_SYMBOLS(EXTMEM_CUDA_FILL)
#undef EXTMEM_CUDA_FILL
  api->library = std::move(*lib);
  return std::shared_ptr<const Api>(std::move(api));
}

const char* known_error_name(CUresult r) noexcept {
  switch (r) {
#define EXTMEM_CU_NAME(e) \
  case e:                 \
    return #e;
    EXTMEM_CU_NAME(CUDA_SUCCESS)
    EXTMEM_CU_NAME(CUDA_ERROR_INVALID_VALUE)
    EXTMEM_CU_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    EXTMEM_CU_NAME(CUDA_ERROR_NOT_INITIALIZED)
    EXTMEM_CU_NAME(CUDA_ERROR_DEINITIALIZED)
    EXTMEM_CU_NAME(CUDA_ERROR_STUB_LIBRARY)
    EXTMEM_CU_NAME(CUDA_ERROR_DEVICE_UNAVAILABLE)
    EXTMEM_CU_NAME(CUDA_ERROR_NO_DEVICE)
    EXTMEM_CU_NAME(CUDA_ERROR_INVALID_DEVICE)
    EXTMEM_CU_NAME(CUDA_ERROR_INVALID_CONTEXT)
    EXTMEM_CU_NAME(CUDA_ERROR_INVALID_HANDLE)
    EXTMEM_CU_NAME(CUDA_ERROR_NOT_FOUND)
    EXTMEM_CU_NAME(CUDA_ERROR_NOT_READY)
    EXTMEM_CU_NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    EXTMEM_CU_NAME(CUDA_ERROR_NOT_PERMITTED)
    EXTMEM_CU_NAME(CUDA_ERROR_NOT_SUPPORTED)
    EXTMEM_CU_NAME(CUDA_ERROR_SYSTEM_NOT_READY)
    EXTMEM_CU_NAME(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
    EXTMEM_CU_NAME(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
    EXTMEM_CU_NAME(CUDA_ERROR_UNKNOWN)
#undef EXTMEM_CU_NAME
  }
  return nullptr;
}

std::string error_name(const Api& api, CUresult r) {
  const char* name = nullptr;
  if (api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name != nullptr) return name;
  if (const char* known = known_error_name(r)) return known;
  return fmt::format("CUresult {}", static_cast<int>(r));
}

Error cuinit_error(const Api& api, CUresult r) {
  const char* meaning = nullptr;
  switch (r) {
    case CUDA_ERROR_STUB_LIBRARY: meaning = "is the CUDA toolkit's stub library, not a driver"; break;
    case CUDA_ERROR_DEVICE_UNAVAILABLE: meaning = "sees no available device (all busy or prohibited)"; break;
    case CUDA_ERROR_NO_DEVICE: meaning = "found no CUDA device"; break;
    case CUDA_ERROR_SYSTEM_NOT_READY: meaning = "reports the system not ready (fabric manager?)"; break;
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: meaning = "does not match the kernel driver's version"; break;
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: meaning = "is a forward-compatibility driver this device cannot use"; break;
    default: return cu_error(api, "cuInit", r);
  }
  return coded_error("cuInit", ErrorKind::no_driver, CodeSpace::cu_result, r, "no CUDA driver",
                     fmt::format("{} ({}): {} {}", error_name(api, r), static_cast<unsigned>(r), api.library->name(), meaning));
}

Error cu_error(const Api& api, std::string step, CUresult r) {
  return coded_error(std::move(step), ErrorKind::driver, CodeSpace::cu_result, r, error_name(api, r));
}

std::string uuid_hex(const CUuuid& uuid) {
  std::string s;
  for (char b : uuid.bytes) s += fmt::format("{:02x}", static_cast<unsigned char>(b));
  return s;
}

Result<CUdevice> device_for_vulkan_uuid(const Api& api, const std::string& vulkan_uuid) {
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) return cuinit_error(api, r);
  int count = 0;
  if (CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) return cu_error(api, "cuDeviceGetCount", r);
  std::string seen;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (CUresult r = api.cuDeviceGet(&dev, i); r != CUDA_SUCCESS) return cu_error(api, fmt::format("cuDeviceGet({})", i), r);
    CUuuid u{};
    if (CUresult r = api.cuDeviceGetUuid(&u, dev); r != CUDA_SUCCESS)
      return cu_error(api, fmt::format("cuDeviceGetUuid({})", i), r);
    if (uuid_hex(u) == vulkan_uuid) return dev;
    seen += fmt::format("{}{}={}", seen.empty() ? "" : ", ", i, uuid_hex(u));
  }
  return Error{"match the CUDA device to the Vulkan device", ErrorKind::unsupported, {},
               fmt::format("no CUDA device has the Vulkan deviceUUID {} (CUDA devices: {})", vulkan_uuid,
                           seen.empty() ? "none" : seen)};
}

Result<std::unique_ptr<PrimaryContext>> PrimaryContext::retain(std::shared_ptr<const Api> api, CUdevice device) {
  CUcontext ctx = nullptr;
  if (CUresult r = api->cuDevicePrimaryCtxRetain(&ctx, device); r != CUDA_SUCCESS)
    return cu_error(*api, "cuDevicePrimaryCtxRetain", r);
  std::unique_ptr<PrimaryContext> p(new PrimaryContext);
  p->api_ = std::move(api);
  p->device_ = device;
  if (CUresult r = p->api_->cuCtxSetCurrent(ctx); r != CUDA_SUCCESS) return cu_error(*p->api_, "cuCtxSetCurrent", r);
  return p;
}

PrimaryContext::~PrimaryContext() {
  (void)api_->cuCtxSetCurrent(nullptr);
  (void)api_->cuDevicePrimaryCtxRelease(device_);
}

Result<std::unique_ptr<DeviceBuffer>> DeviceBuffer::allocate(const Api& api, std::size_t bytes) {
  std::unique_ptr<DeviceBuffer> b(new DeviceBuffer(api));
  if (CUresult r = api.cuMemAlloc(&b->ptr_, bytes); r != CUDA_SUCCESS)
    return cu_error(api, fmt::format("cuMemAlloc({} bytes)", bytes), r);
  b->size_ = bytes;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0) (void)api_.cuMemFree(ptr_);
}

Status gpu_read(const Api& api, CUdeviceptr src, const DeviceBuffer& staging, std::span<std::byte> host) {
  if (CUresult r = api.cuMemsetD32(staging.ptr(), 0, host.size() / 4); r != CUDA_SUCCESS)
    return cu_error(api, "cuMemsetD32(clear staging)", r);
  if (CUresult r = api.cuMemcpyDtoD(staging.ptr(), src, host.size()); r != CUDA_SUCCESS)
    return cu_error(api, "cuMemcpyDtoD(shared -> staging)", r);
  if (CUresult r = api.cuMemcpyDtoH(host.data(), staging.ptr(), host.size()); r != CUDA_SUCCESS)
    return cu_error(api, "cuMemcpyDtoH(staging -> host)", r);
  if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS) return cu_error(api, "cuCtxSynchronize", r);
  return {};
}

Status gpu_write(const Api& api, CUdeviceptr dst, const DeviceBuffer& staging, std::span<const std::byte> host) {
  if (CUresult r = api.cuMemcpyHtoD(staging.ptr(), host.data(), host.size()); r != CUDA_SUCCESS)
    return cu_error(api, "cuMemcpyHtoD(host -> staging)", r);
  if (CUresult r = api.cuMemcpyDtoD(dst, staging.ptr(), host.size()); r != CUDA_SUCCESS)
    return cu_error(api, "cuMemcpyDtoD(staging -> shared)", r);
  if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS) return cu_error(api, "cuCtxSynchronize", r);
  return {};
}

}  // namespace extmem::cuda
