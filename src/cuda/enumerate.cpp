#include "extmem/cuda/enumerate.h"

#include <fmt/format.h>

#include "cuda/api.h"
#include "cuda/loader.h"

namespace extmem::cuda {

Result<Enumeration> enumerate() {
  auto loaded = load();
  if (!loaded) return std::move(loaded).error();
  const Api& api = **loaded;
  Enumeration e;
  e.library = api.library->name();
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) return cuinit_error(api, r);
  if (CUresult r = api.cuDriverGetVersion(&e.driver_version); r != CUDA_SUCCESS)
    return cu_error(api, "cuDriverGetVersion", r);
  int count = 0;
  if (CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) return cu_error(api, "cuDeviceGetCount", r);
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (CUresult r = api.cuDeviceGet(&dev, i); r != CUDA_SUCCESS) return cu_error(api, fmt::format("cuDeviceGet({})", i), r);
    DeviceInfo d;
    d.ordinal = i;
    char name[256] = {};
    d.name = api.cuDeviceGetName(name, sizeof name - 1, dev) == CUDA_SUCCESS ? name : "(cuDeviceGetName failed)";
    CUuuid u{};
    if (api.cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS) d.uuid = uuid_hex(u);
    std::size_t total = 0;
    if (api.cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS) d.total_mem = total;
    auto attr = [&](CUdevice_attribute a) {
      int v = -1;
      return api.cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : -1;
    };
    d.posix_fd = attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
    d.vmm = attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
    d.host_register = attr(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED);
    d.dma_buf = attr(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
    d.ipc_event = attr(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED);
    d.fabric = attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED);
    d.gpu_direct_rdma = attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED);
    if (d.vmm == 1) {
      // The allocation the VMM rows make (cuda.h, cuMemGetAllocationGranularity takes its prop).
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = dev;
      prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      std::size_t g = 0;
      if (api.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS)
        d.granularity_minimum = g;
      g = 0;
      if (api.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS)
        d.granularity_recommended = g;
    }
    e.devices.push_back(std::move(d));
  }
  return e;
}

}  // namespace extmem::cuda
