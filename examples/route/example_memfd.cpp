// X-example-memfd: the example of docs/architecture.md, "How to add a route",
// as a file that compiles and runs. The client half allocates a memfd, writes
// region A and serves (the shared memfd_owner_serve); the server half, which
// drives, maps the fd it receives, reads A, writes B, has the client check B,
// and checks that every page aliases. The product's own route table does not
// hold it: tests/CMakeLists.txt builds a second extmem command whose table is
// the product's routes plus this file (`extmem_example_route`), and
// tests/example_route_tests.cpp runs it.
#include <sys/mman.h>

#include <functional>

#include "extmem/core/pattern.h"
#include "probe/routes.h"
#include "probe/routes/route_file.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

// The legs first: the halves name theirs from this table, checked when the file compiles.
constexpr LegDef kLegs[] = {
    {"mmap", true, "a memfd received over the socket and mapped shares the sender's bytes, every page"},
};

// The driving half: its one start waits for the client's setup, it fills its leg,
// and it alone reports, through its one ending (half.finish, after a failed start
// too: the start has reported the client's failure, and finish adds nothing).
int server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg mmap_leg = report_leg({kLegs, "mmap"});
  DrivingHalf half(ctx, {&mmap_leg});
  auto setup = half.start("the client's memfd");
  if (!setup) return half.finish();

  // Every step is announced before it is tried: a hang, a crash or a test fault names it.
  ctx.step("mmap(received memfd)");
  mmap_leg.attempted = true;
  auto map = os::Mapping::map(setup->fd.get(), layout.size, MAP_SHARED);
  if (map && ctx.test_fault("mmap(received memfd)", "partialalias"))
    map = partial_alias_copy(*map, layout.size / 2);  // test-only: what the alias check must catch
  if (!map) {
    fail_leg(mmap_leg, map.error());  // keeps the step and the errno
    return half.finish();
  }
  ctx.step("read region A through the mapping");
  read_local(map->bytes(), layout, Region::A, mmap_leg);
  ctx.step("write region B through the mapping");
  pattern::fill(layout.region(map->bytes(), Region::B), seed_of(Region::B));
  ctx.step("client checks region B");
  confirm_remote(ctx, Region::B, mmap_leg);
  alias_leg(ctx, map->bytes(), mmap_leg);  // every page, both ways, not only the regions
  return half.finish(SoakPlan{0, map->bytes(), Region::B, Region::A, Region::E, nullptr});
}

// The faults the halves inject themselves, and what each must make the row say.
constexpr FaultDef kFaults[] = {
    {"partialalias", Role::server, "mmap(received memfd)",
     "the mapping aliases the memfd's first half and is a private copy beyond it: the row must not be OK and must "
     "say unaliasedAt=<half the size>"},
};

const RouteDef kXExampleMemfd{
    .row = "X-example-memfd",
    .group = "t3",
    .needs = {},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"maps the received memfd and drives the checks", server},
    .client = {"allocates a memfd, writes A, serves", memfd_owner_serve},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kXExampleMemfd, 9000);

}  // namespace extmem::probe
