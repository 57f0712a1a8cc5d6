#include "probe/routes.h"

#include <array>

#include <fmt/format.h>

namespace extmem::probe {

// One definition per route file (routes/*.cpp). A new route adds its line here
// and its entry below, nothing else outside its own file.
extern const RouteDef kT0AhbBlobTransfer, kT0SustainedLock;                 // routes/not_built.cpp
extern const RouteDef kT1OpaqueFd, kT1DmaBuf;                               // routes/t1_export.cpp
extern const RouteDef kT1OpaqueFdForeignFd;                                 // routes/t1_opaque_fd_foreign_fd.cpp
extern const RouteDef kT1GlesSameProc, kT1GlesCrossProc;                    // routes/t1_gles.cpp
extern const RouteDef kT3MemfdCrossProcess;                                 // routes/t3_memfd_cross_process.cpp
extern const RouteDef kT3ExternalMemoryHost;                                // routes/t3_external_memory_host.cpp
extern const RouteDef kT3ClientMemfdServerImport;                           // routes/t3_client_memfd_server_import.cpp
extern const RouteDef kT3MemfdSealed;                                       // routes/t3_memfd_sealed.cpp
extern const RouteDef kT1OpaqueFdCuda, kT1CudaVmmFd, kT3CudaHostRegister;   // routes/cuda_rows.cpp
extern const RouteDef kT1CudaIpc;                                           // routes/cuda_t1_ipc.cpp
extern const RouteDef kT1CudaVmmMultichunk;                                 // routes/cuda_t1_vmm_multichunk.cpp
extern const RouteDef kT4ImageOpaqueFd, kT4ImageOpaqueFdLinear;             // routes/t4_image_opaque_fd.cpp
extern const RouteDef kT4GlesImageSameProc, kT4GlesImageCrossProc;          // routes/t4_gles_image.cpp
extern const RouteDef kT4ImageDmaBufModifier;                               // routes/t4_image_dma_buf_modifier.cpp
extern const RouteDef kT4ImageCuda;                                         // routes/t4_image_cuda.cpp
extern const RouteDef kS1SemaphoreOpaqueFd, kS1TimelineOpaqueFd, kS1SyncFd;  // routes/s1_vk_semaphore.cpp
extern const RouteDef kS1GlesSemaphore;                                     // routes/s1_gles_semaphore.cpp
extern const RouteDef kS1CudaSemaphore;                                     // routes/s1_cuda_semaphore.cpp

namespace {
constexpr RouteGroup kGroups[] = {
    {"t0", "the T0 (Android AHardwareBuffer) rows", false},
    {"t1", "the T1 (Vulkan export) rows", false},
    {"t3", "the T3 (host memory) rows", false},
    {"t4", "the T4 (image) rows", false},
    {"gles", "the GLES rows", true},
    {"s1", "the S1 (GPU sync across processes) rows", false},
};
}  // namespace

std::span<const RouteDef> route_table() {
  // Copies, made once: the definitions live in other translation units, so
  // their order of initialisation is only settled by the first call.
  static const std::vector<RouteDef> table = {
      kT0AhbBlobTransfer, kT0SustainedLock, kT1OpaqueFd, kT1DmaBuf, kT1OpaqueFdForeignFd, kT1GlesSameProc, kT1GlesCrossProc,
      kT3MemfdCrossProcess, kT3ExternalMemoryHost, kT3ClientMemfdServerImport, kT3MemfdSealed,
      kT1OpaqueFdCuda, kT1CudaVmmFd, kT3CudaHostRegister, kT1CudaIpc, kT1CudaVmmMultichunk,
      kT4ImageOpaqueFd, kT4ImageOpaqueFdLinear, kT4GlesImageSameProc, kT4GlesImageCrossProc,
      kT4ImageDmaBufModifier, kT4ImageCuda,
      kS1SemaphoreOpaqueFd, kS1TimelineOpaqueFd, kS1SyncFd, kS1GlesSemaphore, kS1CudaSemaphore,
  };
  return table;
}

std::span<const RouteGroup> route_groups() { return kGroups; }

const RouteDef* find_route(std::string_view row) {
  for (const RouteDef& r : route_table())
    if (r.row == row) return &r;
  return nullptr;
}

std::string no_cuda_driver_reason(const Error& e) { return fmt::format("no CUDA driver ({}: {})", e.step, e.detail); }

const LegDef* RouteDef::leg(std::string_view name) const {
  for (const LegDef& l : legs)
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace extmem::probe
