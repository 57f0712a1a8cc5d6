// T3-external-memory-host: the importing process allocates a memfd aligned to
// minImportedHostPointerAlignment, imports its own pointer into Vulkan
// (VK_EXT_external_memory_host), and sends the fd to the peer, which maps it,
// reads A and writes B; the importer's GPU reads B and writes E, which the peer
// checks. The same import is then tried on anonymous private memory and on a
// shared tmpfs file (t3/host_backings.h). docs/probe.md, "T3".
#include <sys/mman.h>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/gpu_access.h"
#include "probe/routes/t3/host_backings.h"
#include "probe/routes/t3/host_import.h"
#include "probe/routes/t3/host_matrix.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"mmap", true, "the peer's mapping of the importer's memfd shares its bytes"},
    {"hostimport", true, "the memfd's pointer imported into Vulkan: the GPU reads and writes it, seen by the peer"},
    {"hostanon", true, "the same import on anonymous private memory: the GPU round-trips through it"},
    {"hostfile", true, "the same import on a shared tmpfs file mapping: the GPU round-trips through it"},
};

int server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg mmap_leg = report_leg({kLegs, "mmap"});
  Leg host = report_leg({kLegs, "hostimport"});
  Leg anon = report_leg({kLegs, "hostanon"});
  Leg file = report_leg({kLegs, "hostfile"});
  DrivingHalf half(ctx, {&mmap_leg, &host, &anon, &file});
  RouteReport& rep = half.rep;
  std::shared_ptr<vk::Device> dev = open_host_import_device(ctx, rep);
  if (!dev) return half.stop_before_start();
  const std::size_t align = host_import_alignment(*dev);
  const std::size_t bytes = (layout.size + align - 1) / align * align;

  ctx.step("memfd_create + mmap aligned");
  auto fd = os::create_memfd("extmem-probe-host", bytes);
  if (!fd) {
    rep.facts.fatal = "server: " + why_of(fd.error());
    rep.facts.stop_kind = fd.error().kind;
    return half.stop_before_start();
  }
  auto map = os::Mapping::map_aligned(fd->get(), bytes, align);
  if (!map) {
    rep.facts.fatal = "server: " + why_of(map.error());
    rep.facts.stop_kind = map.error().kind;
    return half.stop_before_start();
  }
  std::span<std::byte> view = map->bytes().subspan(0, layout.size);
  ctx.step("write region A");
  pattern::fill(layout.region(view, Region::A), seed_of(Region::A));

  ctx.step("vkAllocateMemory(import HOST_ALLOCATION of our memfd)");
  std::optional<vk::Buffer> buf = import_host_pointer(*dev, map->data(), bytes, layout.size, host, rep);

  ctx.step("send the memfd");
  if (!half.start(peer::SetupInfo{.allocation_size = bytes}, fd->get())) return half.finish();
  ctx.step("client reads region A");
  read_remote(ctx, Region::A, mmap_leg);
  ctx.step("client writes region B");
  if (auto s = peer_write(ctx, Region::B); !s) fail_leg(mmap_leg, s.error());
  confirm_local(view, layout, Region::B, mmap_leg);
  if (buf) {
    ctx.step("GPU access through the imported host pointer");
    gpu_access(*dev, buf->buffer, layout, Region::B, host);
    if (host.failed_step.empty()) {
      ctx.step("client checks region E (GPU write)");
      confirm_remote(ctx, Region::E, host);
      gpu_whole(ctx, *dev, buf->buffer, layout.size, peer_far(ctx, layout.size), host);
    }
  }
  alias_leg(ctx, view, mmap_leg);
  probe_extra_backings(ctx, *dev, align, anon, file, rep);
  // Last, so a driver that crashes on invalid input has every leg above already measured.
  host_size_matrix(ctx, *dev, align, rep);
  host_invalid_pointers(ctx, *dev, align, rep);
  if (!buf) return half.finish();
  GpuRound round = [&](Region read, std::uint64_t read_seed, Region write, std::uint64_t write_seed) {
    return gpu_round(*dev, buf->buffer, layout, read, read_seed, write, write_seed);
  };
  return half.finish(SoakPlan{0, view, Region::A, Region::B, Region::E, &round});
}

const RouteDef kT3ExternalMemoryHost{
    .row = "T3-external-memory-host",
    .group = "t3",
    .needs = {.extensions = needs::kHostMemory, .handle_types = needs::kHostImportable},
    .legs = kLegs,
    .server = {"allocates a memfd, imports its pointer into Vulkan, drives", server},
    .client = {"maps the received memfd, serves", receive_and_serve},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT3ExternalMemoryHost, 90);

}  // namespace extmem::probe
