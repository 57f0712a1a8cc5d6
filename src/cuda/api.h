// The typed CUDA driver table, resolved from DriverLibrary, and small
// RAII/copy helpers on it. Types and signatures come from cuda_api.h, so
// every build has it; there is no cuda.h dependency.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "cuda/cuda_api.h"
#include "cuda/loader.h"
#include "cuda/symbol_list.h"

namespace extmem::cuda {

/// One function pointer per EXTMEM_CUDA_SYMBOLS entry: the field has the plain
/// name (api.cuMemAlloc) and points at the exported versioned symbol
/// (cuMemAlloc_v2, of type cudrv::fn::cuMemAlloc_v2). Keeps the library open.
struct Api {
#define EXTMEM_CUDA_FIELD(plain, symbol) cudrv::fn::symbol* plain = nullptr;
  EXTMEM_CUDA_SYMBOLS(EXTMEM_CUDA_FIELD)
#undef EXTMEM_CUDA_FIELD
  std::shared_ptr<DriverLibrary> library;
};

/// Opens driver_library_name() and fills the table. Errors: DriverLibrary::open's
/// (no_driver "no CUDA driver", unsupported "missing symbol").
Result<std::shared_ptr<const Api>> load();

/// The name of a common CUresult from the project's own table (the values of
/// cuda_api.h: "CUDA_ERROR_STUB_LIBRARY" for 34), or null for any other value.
const char* known_error_name(CUresult r) noexcept;

/// The CUresult's name from cuGetErrorName ("CUDA_ERROR_INVALID_VALUE"); when
/// that call fails (the toolkit's stub library fails every call) the name from
/// known_error_name(); "CUresult N" when neither names it.
std::string error_name(const Api& api, CUresult r);

/// When cuInit's `r` means there is no usable CUDA here rather than a failing
/// driver (CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_DEVICE_UNAVAILABLE,
/// CUDA_ERROR_NO_DEVICE, CUDA_ERROR_SYSTEM_NOT_READY,
/// CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE):
/// Error{"cuInit", no_driver, "no CUDA driver", "<NAME> (<N>): <what it means>"}
/// with native `r`, the kind DriverLibrary::open gives a missing library, so the
/// rows SKIP (no_cuda_driver_reason). Otherwise cu_error(api, "cuInit", r): a real failure.
Error cuinit_error(const Api& api, CUresult r);

/// Error{step, driver, cuGetErrorName(r)} with native `r`.
Error cu_error(const Api& api, std::string step, CUresult r);

/// 32 lower-case hex digits, the format of Vulkan's deviceUUID in this project.
std::string uuid_hex(const CUuuid& uuid);

/// cuInit(0), then the CUDA device whose cuDeviceGetUuid equals `vulkan_uuid`
/// (VkPhysicalDeviceIDProperties::deviceUUID, hex): the one an fd import is legal on.
/// Errors: cuinit_error() of cuInit (no_driver "no CUDA driver" when no CUDA
/// is usable here); cu_error of cuDeviceGetCount/cuDeviceGet/cuDeviceGetUuid;
/// unsupported "no CUDA device has the Vulkan deviceUUID" when none matches.
Result<CUdevice> device_for_vulkan_uuid(const Api& api, const std::string& vulkan_uuid);

/// The device's primary context, retained and made current; released on destruction.
class PrimaryContext {
 public:
  /// Errors: cu_error("cuDevicePrimaryCtxRetain" / "cuCtxSetCurrent").
  static Result<std::unique_ptr<PrimaryContext>> retain(std::shared_ptr<const Api> api, CUdevice device);
  ~PrimaryContext();
  const Api& api() const noexcept { return *api_; }

 private:
  PrimaryContext() = default;
  std::shared_ptr<const Api> api_;
  CUdevice device_ = 0;
};

/// Device memory from cuMemAlloc, freed with cuMemFree on destruction. The
/// staging buffer the GPU copies go through.
class DeviceBuffer {
 public:
  /// Errors: cu_error("cuMemAlloc(<bytes> bytes)").
  static Result<std::unique_ptr<DeviceBuffer>> allocate(const Api& api, std::size_t bytes);
  ~DeviceBuffer();
  CUdeviceptr ptr() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }

 private:
  DeviceBuffer(const Api& api) : api_(api) {}
  const Api& api_;
  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
};

/// GPU read of `host.size()` bytes at `src`: clears the staging buffer with
/// cuMemsetD32 (so a copy that did nothing cannot pass), cuMemcpyDtoD src ->
/// staging, cuMemcpyDtoH staging -> host, cuCtxSynchronize. `staging` must hold
/// host.size() bytes. Errors: cu_error of the failing call.
Status gpu_read(const Api& api, CUdeviceptr src, const DeviceBuffer& staging, std::span<std::byte> host);

/// GPU write of `host` to `dst`: cuMemcpyHtoD host -> staging, cuMemcpyDtoD
/// staging -> dst, cuCtxSynchronize. Errors: cu_error of the failing call.
Status gpu_write(const Api& api, CUdeviceptr dst, const DeviceBuffer& staging, std::span<const std::byte> host);

}  // namespace extmem::cuda
