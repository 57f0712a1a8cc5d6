// T3-client-memfd-server-import: the client allocates and writes a memfd; the
// server maps the received fd, imports its own mapping of it as a host pointer
// (VK_EXT_external_memory_host), reads what the client wrote, writes back, and
// takes a GPU access on the client's memory. docs/probe.md, "T3".
#include <functional>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/gpu_access.h"
#include "probe/routes/t3/host_import.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"mmap", true, "the client's memfd, received and mapped, shares the client's bytes"},
    {"hostimport", true, "that mapping imported into Vulkan: the GPU reads and writes it, seen by the client"},
};

int server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg mmap_leg = report_leg({kLegs, "mmap"});
  Leg host = report_leg({kLegs, "hostimport"});
  DrivingHalf half(ctx, {&mmap_leg, &host});
  RouteReport& rep = half.rep;
  auto setup = half.start("the client's memfd");
  if (!setup) return half.finish();
  std::shared_ptr<vk::Device> dev = open_host_import_device(ctx, rep);
  if (!dev) return half.finish();
  const std::size_t align = host_import_alignment(*dev);
  const std::size_t import_bytes = layout.size / align * align;  // the client's memfd is only page-granular

  ctx.step("mmap(received memfd) aligned for import");
  mmap_leg.attempted = true;
  auto map = os::Mapping::map_aligned(setup->fd.get(), layout.size, align);
  if (!map) {
    fail_leg(mmap_leg, map.error());
    return half.finish();
  }
  std::span<std::byte> view = map->bytes();
  ctx.step("read region A through the mapping");
  read_local(view, layout, Region::A, mmap_leg);

  std::optional<vk::Buffer> buf;
  if (import_bytes < layout.window_offset() + kMinSize) {
    rep.facts.unsupported = fmt::format("size {} leaves no region window once rounded down to the import alignment {}",
                                        layout.size, align);
  } else {
    ctx.step("vkAllocateMemory(import HOST_ALLOCATION of the client's memfd)");
    buf = import_host_pointer(*dev, view.data(), import_bytes, import_bytes, host, rep);
  }
  if (buf) {
    ctx.step("GPU access on the client's memory");
    gpu_access(*dev, buf->buffer, layout, Region::A, host);
  }
  ctx.step("write region B through the mapping");
  pattern::fill(layout.region(view, Region::B), seed_of(Region::B));
  ctx.step("client checks region B");
  confirm_remote(ctx, Region::B, mmap_leg);
  if (buf && host.failed_step.empty()) {
    ctx.step("client checks region E (GPU write)");
    confirm_remote(ctx, Region::E, host);
    gpu_whole(ctx, *dev, buf->buffer, import_bytes, peer_far(ctx, import_bytes), host);  // what the import covers
  }
  alias_leg(ctx, view, mmap_leg);
  GpuRound round = [&](Region read, std::uint64_t read_seed, Region write, std::uint64_t write_seed) {
    return gpu_round(*dev, buf->buffer, layout, read, read_seed, write, write_seed);
  };
  return buf ? half.finish(SoakPlan{0, view, Region::B, Region::A, Region::E, &round}) : half.finish();
}

const RouteDef kT3ClientMemfdServerImport{
    .row = "T3-client-memfd-server-import",
    .group = "t3",
    .needs = {.extensions = needs::kHostMemory, .handle_types = needs::kHostImportable},
    .legs = kLegs,
    .server = {"maps the client's memfd, imports the pointer into Vulkan, drives", server},
    .client = {"allocates a memfd, writes A, serves", memfd_owner_serve},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT3ClientMemfdServerImport, 100);

}  // namespace extmem::probe
