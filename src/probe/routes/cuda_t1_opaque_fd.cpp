// T1-opaque-fd-cuda: the server's Vulkan OPAQUE_FD export (as in T1-opaque-fd)
// imported by the client into CUDA (cuImportExternalMemory +
// cuExternalMemoryGetMappedBuffer). The client's GPU reads region A and writes
// region E through a staging buffer; the server checks E through its Vulkan
// mapping. Issue #4; docs/probe.md, "T1".
#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/cuda_measure.h"
#include "probe/routes/cuda_route_util.h"
#include "probe/routes/vk_export.h"

namespace extmem::probe {
namespace {

// One timed import of a fresh dup() of `fd` (cuImportExternalMemory +
// cuExternalMemoryGetMappedBuffer of `mapped` bytes, µs), undone untimed.
Result<double> import_once(const cuda::Api& api, int fd, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC& like,
                           std::size_t mapped) {
  auto dup = ImportDup::of(fd);
  if (!dup) return std::move(dup).error();
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc = like;
  desc.handle.fd = dup->number();
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.size = mapped;
  CUexternalMemory ext = nullptr;
  CUdeviceptr ptr = 0;
  const double t0 = os::monotonic_seconds();
  CUresult r = api.cuImportExternalMemory(&ext, &desc);
  CUresult m = r == CUDA_SUCCESS ? api.cuExternalMemoryGetMappedBuffer(&ptr, ext, &bd) : r;
  const double t1 = os::monotonic_seconds();
  (void)dup->settle(r == CUDA_SUCCESS);  // a successful import owns the fd (cuda.h, cuImportExternalMemory)
  if (r != CUDA_SUCCESS) return cuda::cu_error(api, "cuImportExternalMemory(OPAQUE_FD)", r);
  if (m == CUDA_SUCCESS) (void)api.cuMemFree(ptr);
  (void)api.cuDestroyExternalMemory(ext);
  if (m != CUDA_SUCCESS) return cuda::cu_error(api, "cuExternalMemoryGetMappedBuffer", m);
  return (t1 - t0) * 1e6;
}

// The offset view (docs/probe.md, "CUDA views at an offset"): a second mapped buffer whose
// offset is region D's, not 0. A driver that maps the allocation's base whatever the offset
// passes every check made at offset 0; here the view's first bytes must be region D's and its
// bytes further in must be the server's region F, both at their offsets in the allocation.
void offset_view(ChildContext& ctx, const CudaSide& side, CUexternalMemory ext, Leg& leg, RouteReport& rep) {
  const Layout& layout = ctx.layout();
  const cuda::Api& api = *side.api;
  const std::size_t off = layout.offset(Region::D);
  const std::size_t span = layout.offset(Region::F) + kRegionSize - off;  // D, E and F
  leg.attempted = true;
  ctx.step(fmt::format("cuExternalMemoryGetMappedBuffer(offset {})", off));
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.offset = off;
  bd.size = span;
  CUdeviceptr view = 0;
  if (CUresult m = api.cuExternalMemoryGetMappedBuffer(&view, ext, &bd); m != CUDA_SUCCESS) {
    // The offset is a multiple of 4096 inside the allocation, which satisfies the Vulkan buffer
    // alignment CUDA asks the offset to match (cuda.h), so a refusal is the leg's failure.
    fail_leg(leg, cuda::cu_error(api, fmt::format("cuExternalMemoryGetMappedBuffer(offset {})", off), m));
    return;
  }
  // The region helpers address base + layout.offset(region); a base `off` bytes before the view
  // makes them address the view at (region offset - off), i.e. the same allocation offset.
  const CUdeviceptr base = view - off;
  if (cuda_write_region(ctx, side, base, Region::D, leg)) {
    ctx.step("server checks region D (written through the offset view)");
    confirm_remote(ctx, Region::D, leg);
  }
  ctx.step("server writes region F");
  if (auto s = peer_write(ctx, Region::F); !s) {
    fail_leg(leg, s.error());
  } else {
    cuda_read_region(ctx, side, base, Region::F, leg);
  }
  rep.detail.push_back(fmt::format("cudaoffset: view at {} of {} bytes", off, span));
  (void)api.cuMemFree(view);
}

}  // namespace

int cuda_opaque_fd_client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  RouteReport rep;
  Leg cu{"cudaimport", true};
  Leg offv{"cudaoffset", true};
  auto finish = [&] {
    rep.legs = {cu, offv};
    return end_half(ctx, rep);
  };
  auto setup = await_setup(ctx, rep, "the server's export");
  if (!setup) return 0;
  const auto alloc_size = setup->info.value("allocation_size", std::uint64_t{0});
  const bool dedicated = setup->info.value("dedicated", false);
  const std::string uuid = setup->info.value("device_uuid", std::string());
  rep.detail.push_back(fmt::format("allocation={} dedicated={}", alloc_size, dedicated ? "yes" : "no"));

  auto side = open_cuda(ctx, rep.facts, uuid, kRegionSize);
  if (!side) return finish();
  const cuda::Api& api = *side->api;

  auto dup = ImportDup::of(setup->fd.get());
  if (!dup) {
    fail_leg(cu, dup.error());
    return finish();
  }
  ctx.step("cuImportExternalMemory(OPAQUE_FD)");
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = dup->number();
  desc.size = alloc_size;
  // CUDA must be told what Vulkan did (cuda.h, CUDA_EXTERNAL_MEMORY_DEDICATED).
  desc.flags = dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
  CUexternalMemory ext = nullptr;
  CUresult r = api.cuImportExternalMemory(&ext, &desc);
  // A successful import owns the fd (cuda.h, cuImportExternalMemory).
  rep.detail.push_back("cudaimport " + dup->settle(r == CUDA_SUCCESS));
  if (r != CUDA_SUCCESS) {
    fail_leg(cu, cuda::cu_error(api, "cuImportExternalMemory(OPAQUE_FD)", r));
    return finish();
  }
  ctx.step("cuExternalMemoryGetMappedBuffer");
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.offset = 0;
  bd.size = layout.size;
  CUdeviceptr ptr = 0;
  if (CUresult m = api.cuExternalMemoryGetMappedBuffer(&ptr, ext, &bd); m != CUDA_SUCCESS) {
    fail_leg(cu, cuda::cu_error(api, "cuExternalMemoryGetMappedBuffer", m));
  } else {
    cuda_read_region(ctx, *side, ptr, Region::A, cu);
    if (cuda_write_region(ctx, *side, ptr, Region::E, cu)) {
      ctx.step("server checks region E through its Vulkan mapping");
      confirm_remote(ctx, Region::E, cu);
    }
    cuda_whole(ctx, *side, ptr, layout.size, peer_far(ctx, layout.size), cu, rep);
    if (cu.read_ok && cu.write_ok && measure::enabled()) {
      cuda_copy_leg(ctx, api, cu.name, ptr, layout.size);
      ctx.step("measure import latency (cudaimport)");
      measure::import_latency(cu.name, [&] { return import_once(api, setup->fd.get(), desc, layout.size); });
    }
    (void)api.cuMemFree(ptr);  // a mapped buffer is freed with cuMemFree (cuda.h)
    if (cu.read_ok) offset_view(ctx, *side, ext, offv, rep);
  }
  (void)api.cuDestroyExternalMemory(ext);
  return finish();
}

}  // namespace extmem::probe
