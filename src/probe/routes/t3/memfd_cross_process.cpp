// T3-memfd-cross-process: the OS baseline, no Vulkan. The client allocates and
// writes a memfd, the server maps the received fd, reads A, writes B, and the
// client checks B. docs/probe.md, "T3".
#include <sys/mman.h>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"mmap", true, "a memfd received over the socket and mapped shares the sender's bytes"},
};

int server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg mmap_leg = report_leg({kLegs, "mmap"});
  DrivingHalf half(ctx, {&mmap_leg});
  auto setup = half.start("the client's memfd");
  if (!setup) return half.finish();
  ctx.step("mmap(received memfd)");
  mmap_leg.attempted = true;
  auto map = os::Mapping::map(setup->fd.get(), layout.size, MAP_SHARED);
  if (map && ctx.test_fault("mmap(received memfd)", "partialalias"))
    map = partial_alias_copy(*map, layout.size / 2);  // test-only: the whole-allocation check's negative control
  if (!map) {
    fail_leg(mmap_leg, map.error());
  } else {
    ctx.step("read region A through the mapping");
    read_local(map->bytes(), layout, Region::A, mmap_leg);
    ctx.step("write region B through the mapping");
    pattern::fill(layout.region(map->bytes(), Region::B), seed_of(Region::B));
    ctx.step("client checks region B");
    confirm_remote(ctx, Region::B, mmap_leg);
    alias_leg(ctx, map->bytes(), mmap_leg);
  }
  return map ? half.finish(SoakPlan{0, map->bytes(), Region::B, Region::A, Region::E, nullptr}) : half.finish();
}

constexpr FaultDef kFaults[] = {
    {"partialalias", Role::server, "mmap(received memfd)",
     "the mapping aliases the memfd's first half and is a private copy beyond it: the whole-allocation check must "
     "report unaliasedAt=<half the size>"},
};

const RouteDef kT3MemfdCrossProcess{
    .row = "T3-memfd-cross-process",
    .group = "t3",
    .needs = {},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"maps the received memfd and drives the checks", server},
    .client = {"allocates a memfd, writes A, serves", memfd_owner_serve},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT3MemfdCrossProcess, 80);

}  // namespace extmem::probe
