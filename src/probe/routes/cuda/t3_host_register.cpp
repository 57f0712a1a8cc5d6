// T3-cuda-host-register: the client's memfd (as in T3-client-memfd-server-import)
// mapped by the server and registered with CUDA (cuMemHostRegister, DEVICEMAP);
// the server's GPU reads what the client wrote (region A) and writes region E
// back; the client verifies through its own mapping. Issue #4.
#include <sys/mman.h>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/clock.h"
#include "probe/worker/measure.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/cuda/measure.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kHostRegisterLegs[] = {
    {"mmap", true, "the client's memfd, received and mapped, shares the client's bytes"},
    {"cudahost", true, "that mapping registered with CUDA: the GPU reads and writes it, seen by the client"},
};

// One timed registration (cuMemHostRegister(DEVICEMAP) + cuMemHostGetDevicePointer, µs) of a
// fresh MAP_SHARED mapping of the memfd `fd` (`bytes`): the leg's own mapping is registered
// already, and a range registers once. Unregistered and unmapped untimed.
Result<double> register_once(const cuda::Api& api, int fd, std::size_t bytes) {
  auto map = os::Mapping::map(fd, bytes, MAP_SHARED);
  if (!map) return std::move(map).error();
  void* p = map->bytes().data();
  CUdeviceptr dptr = 0;
  const double t0 = os::monotonic_seconds();
  CUresult r = api.cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_DEVICEMAP);
  CUresult g = r == CUDA_SUCCESS ? api.cuMemHostGetDevicePointer(&dptr, p, 0) : r;
  const double t1 = os::monotonic_seconds();
  if (r != CUDA_SUCCESS) return cuda::cu_error(api, "cuMemHostRegister(DEVICEMAP)", r);
  (void)api.cuMemHostUnregister(p);
  if (g != CUDA_SUCCESS) return cuda::cu_error(api, "cuMemHostGetDevicePointer", g);
  return (t1 - t0) * 1e6;
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int cuda_host_register_server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg mmap_leg = report_leg({EXTMEM_ROUTE_FILE::kHostRegisterLegs, "mmap"});
  Leg host = report_leg({EXTMEM_ROUTE_FILE::kHostRegisterLegs, "cudahost"});
  DrivingHalf half(ctx, {&mmap_leg, &host});
  RouteReport& rep = half.rep;
  auto setup = half.start("the client's memfd");
  if (!setup) return half.finish();
  ctx.step("read the selected Vulkan device's deviceUUID");
  auto uuid = selected_vulkan_uuid(ctx);
  if (!uuid) {
    rep.facts.fatal = "server: " + why_of(uuid.error());
    rep.facts.stop_kind = uuid.error().kind;
    return half.finish();
  }
  auto side = open_cuda(ctx, rep.facts, *uuid, kRegionSize);
  if (!side) return half.finish();
  const cuda::Api& api = *side->api;
  const int supported = side->attribute(CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED);
  rep.detail.push_back(fmt::format("CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED={}", supported));

  ctx.step("mmap(received memfd)");
  mmap_leg.attempted = true;
  auto map = os::Mapping::map(setup->fd.get(), layout.size, MAP_SHARED);
  if (!map) {
    fail_leg(mmap_leg, map.error());
    return half.finish();
  }
  std::span<std::byte> view = map->bytes();
  ctx.step("read region A through the mapping");
  read_local(view, layout, Region::A, mmap_leg);

  ctx.step("cuMemHostRegister(DEVICEMAP) of the client's memfd mapping");
  host.attempted = true;
  CUresult r = api.cuMemHostRegister(view.data(), layout.size, CU_MEMHOSTREGISTER_DEVICEMAP);
  bool registered = r == CUDA_SUCCESS;
  if (!registered) {
    Error e = cuda::cu_error(api, "cuMemHostRegister(DEVICEMAP)", r);
    fail_leg(host, e);
    // UNSUPPORTED vs FAIL as for Vulkan handle types: a device that says it cannot register is unsupported.
    if (supported == 0) rep.facts.unsupported = "server: CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED=0; " + why_of(e);
  } else {
    ctx.step("cuMemHostGetDevicePointer");
    CUdeviceptr dptr = 0;
    if (CUresult g = api.cuMemHostGetDevicePointer(&dptr, view.data(), 0); g != CUDA_SUCCESS) {
      fail_leg(host, cuda::cu_error(api, "cuMemHostGetDevicePointer", g));
    } else {
      cuda_read_region(ctx, *side, dptr, Region::A, host);
      if (cuda_write_region(ctx, *side, dptr, Region::E, host)) {
        ctx.step("client checks region E (CUDA GPU write)");
        confirm_remote(ctx, Region::E, host);
      }
      cuda_whole(ctx, *side, dptr, layout.size, peer_far(ctx, layout.size), host, rep);
      if (host.read_ok && host.write_ok && measure::enabled()) {
        if (LegFigures* m = measure::leg(host.name)) m->gpu_shared_memory = "host";  // a registered memfd: host pages
        cuda_copy_leg(ctx, api, host.name, dptr, layout.size);
        ctx.step("measure registration latency (cudahost)");
        measure::import_latency(host.name, [&] { return register_once(api, setup->fd.get(), layout.size); });
      }
    }
  }
  ctx.step("write region B through the mapping");
  pattern::fill(layout.region(view, Region::B), seed_of(Region::B));
  ctx.step("client checks region B");
  confirm_remote(ctx, Region::B, mmap_leg);
  alias_leg(ctx, view, mmap_leg);
  if (registered) (void)api.cuMemHostUnregister(view.data());
  return half.finish();
}

namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr FaultDef kFaults[] = {corrupt_fault(Role::server)};

const RouteDef kT3CudaHostRegister{
    .row = "T3-cuda-host-register",
    .group = "t3",
    .needs = {.cuda = true},
    .legs = kHostRegisterLegs,
    .faults = kFaults,
    .server = {"maps the received memfd, registers it with CUDA, drives", cuda_host_register_server},
    .client = {"allocates a memfd, writes A, serves", memfd_owner_serve},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT3CudaHostRegister, 140);

}  // namespace extmem::probe
