// T1-cuda-vmm-fd: the server allocates device memory with CUDA's virtual
// memory management API, exportable as a POSIX fd (cuMemCreate +
// cuMemExportToShareableHandle); the client imports it
// (cuMemImportFromShareableHandle, cuMemAddressReserve, cuMemMap,
// cuMemSetAccess), and both sides move bytes only by GPU copies. The client
// also imports the fd into Vulkan as OPAQUE_FD, an informational leg. Issue #4.
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/clock.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/gpu_access.h"
#include "probe/worker/measure.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/cuda/measure.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kVmmLegs[] = {
    {"cudaimport", true, "a cuMemCreate fd imported and mapped by a second CUDA context: GPU copies round-trip"},
    {"vkimport", false, "the same fd imported into Vulkan as OPAQUE_FD shares the bytes"},
};

// Releases a cuMemCreate/cuMemImportFromShareableHandle handle on scope exit
// (a mapping keeps the memory alive until it is unmapped).
struct AllocationRelease {
  const cuda::Api& api;
  CUmemGenericAllocationHandle handle;
  ~AllocationRelease() { (void)api.cuMemRelease(handle); }
};

// A physical allocation mapped read-write for `device` at a reserved range; undone on destruction.
class VmmMapping {
 public:
  VmmMapping(const cuda::Api& api) : api_(api) {}
  ~VmmMapping() {
    if (mapped_) (void)api_.cuMemUnmap(va_, size_);
    if (va_ != 0) (void)api_.cuMemAddressFree(va_, size_);
  }
  Status map(CUmemGenericAllocationHandle handle, std::size_t size, std::size_t granularity, CUdevice device) {
    size_ = size;
    if (CUresult r = api_.cuMemAddressReserve(&va_, size, granularity, 0, 0); r != CUDA_SUCCESS) {
      va_ = 0;
      return cuda::cu_error(api_, "cuMemAddressReserve", r);
    }
    if (CUresult r = api_.cuMemMap(va_, size, 0, handle, 0); r != CUDA_SUCCESS) return cuda::cu_error(api_, "cuMemMap", r);
    mapped_ = true;
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (CUresult r = api_.cuMemSetAccess(va_, size, &access, 1); r != CUDA_SUCCESS)
      return cuda::cu_error(api_, "cuMemSetAccess(READWRITE)", r);
    return {};
  }
  CUdeviceptr va() const { return va_; }

 private:
  const cuda::Api& api_;
  CUdeviceptr va_ = 0;
  std::size_t size_ = 0;
  bool mapped_ = false;
};

// The allocation size: the layout size rounded up to the minimum granularity.
std::size_t rounded(std::size_t size, std::size_t granularity) {
  return (size + granularity - 1) / granularity * granularity;
}

// One timed import of a fresh dup() of `fd` (cuMemImportFromShareableHandle +
// cuMemAddressReserve + cuMemMap + cuMemSetAccess of `size` bytes, µs), undone untimed.
Result<double> vmm_import_once(const cuda::Api& api, int fd, std::size_t size, std::size_t granularity,
                               CUdevice device) {
  auto dup = os::dup_fd(fd);
  if (!dup) return std::move(dup).error();
  CUmemGenericAllocationHandle handle = 0;
  const double t0 = os::monotonic_seconds();
  CUresult r = api.cuMemImportFromShareableHandle(
      &handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(dup->get())), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (r != CUDA_SUCCESS) return cuda::cu_error(api, "cuMemImportFromShareableHandle(POSIX_FILE_DESCRIPTOR)", r);
  Status mapped;
  double t1 = 0;
  {
    VmmMapping mapping(api);
    mapped = mapping.map(handle, size, granularity, device);
    t1 = os::monotonic_seconds();
  }  // unmapped before the handle is released
  (void)api.cuMemRelease(handle);
  // As in the leg: a driver that took the fd closed it, one that did not leaves it to us.
  if (!os::fd_is_open(dup->get())) (void)dup->release();
  if (!mapped) return mapped.error();
  return (t1 - t0) * 1e6;
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int cuda_vmm_fd_server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  CudaServer server(ctx);
  if (!server.open(layout.size)) return 0;
  CudaSide& side = server.side();
  const cuda::Api& api = server.api();
  if (!server.require_vmm_posix_fd()) return 0;
  CUmemAllocationProp prop = posix_fd_allocation_prop(side.device);
  ctx.step("cuMemGetAllocationGranularity(MINIMUM)");
  std::size_t granularity = 0;
  if (CUresult r = api.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, "cuMemGetAllocationGranularity", r));
  const std::size_t size = rounded(layout.size, granularity);
  ctx.step("cuMemCreate(POSIX_FILE_DESCRIPTOR)");
  CUmemGenericAllocationHandle handle = 0;
  // Both attributes say yes, so a refusal here is a driver failure, not an absent capability.
  if (CUresult r = api.cuMemCreate(&handle, size, &prop, 0); r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, fmt::format("cuMemCreate({} bytes, POSIX_FILE_DESCRIPTOR)", size), r));
  AllocationRelease release{api, handle};
  ctx.step("cuMemAddressReserve + cuMemMap + cuMemSetAccess");
  VmmMapping mapping(api);
  if (auto s = mapping.map(handle, size, granularity, side.device); !s) return server.fail(s.error());

  std::vector<std::byte> mirror(layout.size);
  ctx.step("write region A (GPU copy)");
  pattern::fill(layout.region(std::span<std::byte>(mirror), Region::A), seed_of(Region::A));
  if (auto s = cuda::gpu_write(api, mapping.va(), *side.staging, mirror); !s) return server.fail(s.error());

  ctx.step("cuMemExportToShareableHandle(POSIX_FILE_DESCRIPTOR)");
  int raw_fd = -1;
  if (CUresult r = api.cuMemExportToShareableHandle(&raw_fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, "cuMemExportToShareableHandle(POSIX_FILE_DESCRIPTOR)", r));
  os::UniqueFd fd(raw_fd);
  ctx.step("post-export fd sanity");
  if (raw_fd < 0 || !os::fd_is_open(raw_fd))
    return server.fail(Error{"cuMemExportToShareableHandle(POSIX_FILE_DESCRIPTOR)", ErrorKind::driver, {},
                             fmt::format("exported fd {} is not open", raw_fd)});

  ctx.step("send the fd");
  const peer::SetupInfo info{.allocation_size = size, .fd_target = os::fd_target(raw_fd),
                             .device_uuid = side.vulkan_uuid, .granularity = granularity};
  if (!send_setup(ctx, info, raw_fd)) return 1;
  fd.reset();
  ctx.step("serve the peer's checks (GPU copies to and from the allocation)");
  ServeSync sync;
  sync.refresh = [&] { return cuda::gpu_read(api, mapping.va(), *side.staging, mirror); };
  sync.publish = [&] { return cuda::gpu_write(api, mapping.va(), *side.staging, mirror); };
  return serve(ctx, mirror, sync) ? 0 : 1;
}

int cuda_vmm_fd_client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg cu = report_leg({EXTMEM_ROUTE_FILE::kVmmLegs, "cudaimport"});
  Leg vki = report_leg({EXTMEM_ROUTE_FILE::kVmmLegs, "vkimport"});
  DrivingHalf half(ctx, {&cu, &vki});
  RouteReport& rep = half.rep;
  auto setup = half.start("the server's CUDA export");
  if (!setup) return half.finish();
  const auto size = setup->info.allocation_size.value_or(std::size_t{0});
  const auto granularity = setup->info.granularity.value_or(std::size_t{0});
  rep.detail.push_back(fmt::format("allocation={} granularity={} fd={}", size, granularity,
                                   setup->info.fd_target.value_or(std::string("?"))));
  if (size < layout.size || granularity == 0) {
    rep.facts.fatal = fmt::format("server announced allocation {} granularity {} for size {}", size, granularity, layout.size);
    return half.finish();
  }
  auto side = open_cuda(ctx, rep.facts, setup->info.device_uuid.value_or(std::string()), kRegionSize);
  if (!side) return half.finish();
  const cuda::Api& api = *side->api;

  {
    ctx.step("cuMemImportFromShareableHandle(POSIX_FILE_DESCRIPTOR)");
    cu.attempted = true;
    CUmemGenericAllocationHandle handle = 0;
    CUresult r = api.cuMemImportFromShareableHandle(
        &handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(setup->fd.get())),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    rep.detail.push_back(std::string("cudaimport fd-consumed=") + (os::fd_is_open(setup->fd.get()) ? "no" : "yes"));
    if (!os::fd_is_open(setup->fd.get())) (void)setup->fd.release();
    if (r != CUDA_SUCCESS) {
      fail_leg(cu, cuda::cu_error(api, "cuMemImportFromShareableHandle(POSIX_FILE_DESCRIPTOR)", r));
    } else {
      AllocationRelease release{api, handle};
      ctx.step("cuMemAddressReserve + cuMemMap + cuMemSetAccess");
      VmmMapping mapping(api);
      if (auto s = mapping.map(handle, size, granularity, side->device); !s) {
        fail_leg(cu, s.error());
      } else {
        cuda_read_region(ctx, *side, mapping.va(), Region::A, cu);
        if (cuda_write_region(ctx, *side, mapping.va(), Region::E, cu)) {
          ctx.step("server checks region E (GPU copy out of its own mapping)");
          confirm_remote(ctx, Region::E, cu);
        }
        cuda_whole(ctx, *side, mapping.va(), layout.size, peer_far(ctx, layout.size), cu, rep);
        if (cu.read_ok && cu.write_ok && measure::enabled()) {
          if (LegFigures* m = measure::leg(cu.name)) m->gpu_shared_memory = "device-local";  // cuMemCreate'd device memory
          cuda_copy_leg(ctx, api, cu.name, mapping.va(), layout.size);
          ctx.step("measure import latency (cudaimport)");
          if (setup->fd.valid())
            measure::import_latency(cu.name, [&] {
              return vmm_import_once(api, setup->fd.get(), size, granularity, side->device);
            });
          else
            if (LegFigures* m = measure::leg(cu.name)) m->import_error = "no fd left to import (the CUDA import consumed it)";
        }
      }
    }
  }

  // Informational: the same fd imported into Vulkan as OPAQUE_FD device-local memory.
  vki.attempted = true;
  auto dev = open_device(ctx, export_extensions(kOpaqueFd));
  if (!dev) {
    fail_leg(vki, dev.error());
  } else if (auto missing = missing_extension(**dev, kOpaqueFd)) {
    vki.note = *missing;
  } else if (!setup->fd.valid()) {
    vki.note = "no fd left to import (the CUDA import consumed it)";
  } else if (auto dup = ImportDup::of(setup->fd.get()); !dup) {
    fail_leg(vki, dup.error());
  } else {
    ctx.step("vkAllocateMemory(import OPAQUE_FD from CUDA)");
    vk::AllocationRequest req;
    req.size = layout.size;
    req.external_handle_types = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    req.import_fd = dup->number();
    req.import_fd_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
    req.allocation_size = size;
    req.required_flags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    req.dedicated = 0;
    req.map = false;
    vk::AllocationFailure af;
    auto buf = (*dev)->create_buffer(req, &af);
    rep.detail.push_back("vkimport " + dup->settle(buf || af.memory_allocated));
    if (!buf) {
      fail_leg(vki, af.error);
    } else {
      ctx.step("Vulkan GPU access on the CUDA allocation");
      record_gpu_round(gpu_round(**dev, buf->buffer, layout, Region::A, seed_of(Region::A), Region::C, seed_of(Region::C)),
                       "Vulkan GPU", Region::A, vki);
      if (vki.failed_step.empty()) {
        ctx.step("server checks region C (Vulkan GPU write)");
        confirm_remote(ctx, Region::C, vki);
        gpu_whole(ctx, **dev, buf->buffer, layout.size, peer_far(ctx, layout.size), vki);
        if (vki.read_ok && vki.write_ok) rep.detail.push_back(whole_coverage_text(vki.name, layout.size));
      }
      if (vki.read_ok && vki.write_ok && measure::enabled()) {
        if (LegFigures* m = measure::leg(vki.name)) m->gpu_shared_memory = "device-local";
        measure::gpu_leg(vki.name, **dev, buf->buffer, layout.size);
        ctx.step("measure import latency (vkimport)");
        req.import_fd = setup->fd.get();  // measure::import_leg imports a fresh dup of it each time
        measure::import_leg(vki.name, **dev, req);
      }
    }
  }
  return half.finish();
}

namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr FaultDef kFaults[] = {corrupt_fault(Role::client)};

const RouteDef kT1CudaVmmFd{
    .row = "T1-cuda-vmm-fd",
    .group = "t1",
    .needs = {.cuda = true},
    .legs = kVmmLegs,
    .faults = kFaults,
    .server = {"allocates with cuMemCreate, exports a POSIX fd, serves", cuda_vmm_fd_server},
    .client = {"imports the fd into CUDA and Vulkan, drives", cuda_vmm_fd_client},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1CudaVmmFd, 130);

}  // namespace extmem::probe
