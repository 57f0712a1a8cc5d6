// Phase A's CUDA part: the driver's devices and the attributes that decide the
// CUDA routes (docs/probe.md, "Phase A"; issue #4 item 3). Plain types: no CUDA
// declarations needed to use them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string uuid;             ///< cuDeviceGetUuid, 32 lower-case hex digits
  std::uint64_t total_mem = 0;  ///< bytes, cuDeviceTotalMem
  /// cuDeviceGetAttribute values (-1: the query failed):
  int posix_fd = -1;       ///< CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED (T1-cuda-vmm-fd)
  int vmm = -1;            ///< CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (T1-cuda-vmm-fd)
  int host_register = -1;  ///< CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED (T3-cuda-host-register)
  int dma_buf = -1;        ///< CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  int ipc_event = -1;      ///< CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED (T1-cuda-ipc: UNSUPPORTED when 0)
  int fabric = -1;         ///< CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED (informational: no row uses it)
  int gpu_direct_rdma = -1;  ///< CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED (informational)
  /// cuMemGetAllocationGranularity for a device-located, POSIX-fd-exportable
  /// pinned allocation (what T1-cuda-vmm-fd and T1-cuda-vmm-multichunk create),
  /// bytes; 0 when the query failed or VMM is unsupported.
  std::uint64_t granularity_minimum = 0;
  std::uint64_t granularity_recommended = 0;
};

struct Enumeration {
  std::string library;     ///< the library opened (driver_library_name())
  int driver_version = 0;  ///< cuDriverGetVersion, e.g. 13000
  std::vector<DeviceInfo> devices;
};

/// Loads the driver and lists its devices. Errors: cuda::load()'s (no_driver "no CUDA driver", unsupported "missing symbol");
/// cu_error of cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet.
/// A failed name/UUID/attribute query of one device is recorded, not fatal.
Result<Enumeration> enumerate();

/// Whether this build has the CUDA routes: always true since the driver API
/// is declared in the library (kept for the "built" field of --json).
bool routes_built() noexcept;

/// One phrase for --version and phase A: "CUDA routes built (libcuda.so.1
/// loaded at run time)".
std::string build_note();

}  // namespace extmem::cuda
