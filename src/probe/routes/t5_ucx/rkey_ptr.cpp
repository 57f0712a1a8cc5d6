// T5-ucx-rkey-ptr: the driver maps the owner's UCX memory with ucp_rkey_ptr
// and checks it as every mapping row does: region A read, region B written and
// seen by the owner, every page both ways, the owner's later writes seen (an
// alias). Where UCX gives no pointer, UNSUPPORTED with UCX's status and the
// transports it chose; a pointer or bytes over another path than
// --expect-transport FAIL. docs/probe.md, "T5".
#include <unistd.h>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/proc_maps.h"
#include "probe/routes.h"
#include "probe/routes/route_file.h"
#include "probe/routes/t5_ucx/side.h"
#include "probe/worker/half_end.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"rkeyptr", true,
     "ucp_rkey_ptr of the owner's ucp_mem_map memory shares the owner's bytes, every page, both directions"},
};

// The transport whose segment `p` lies in, from the mapping's name in
// /proc/self/maps (sysv: "/SYSV<key> (deleted)"; posix: a /dev/shm file, a
// memfd or /proc/PID/fd/N), and that name; "" when the mapping is not found.
std::pair<std::string, std::string> mapping_of(const std::byte* p) {
  auto maps = os::read_maps(::getpid());
  if (!maps) return {"", ""};
  for (const os::MapEntry& m : *maps) {
    if (!m.contains(reinterpret_cast<std::uintptr_t>(p))) continue;
    std::string tl = m.path.rfind("/SYSV", 0) == 0 ? "sysv" : m.shared() && !m.path.empty() ? "posix" : "";
    return {tl, m.path.empty() ? "(anonymous)" : m.path};
  }
  return {"", ""};
}

int server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg leg = report_leg({kLegs, "rkeyptr"});
  DrivingHalf half(ctx, {&leg});
  auto setup = half.start("the owner's UCX memory");
  if (!setup) return half.finish();
  auto c = t5::connect_owner(ctx);
  if (!c) {
    stop_row(half.rep.facts, c.error().kind,
             c.error().kind == ErrorKind::no_driver ? t5::no_ucx_reason(c.error()) : why_of(c.error()));
    return half.finish();
  }
  ctx.step("ucp_rkey_ptr");
  auto p = c->key->pointer(c->remote_address);
  const ucx::EndpointInfo lanes = ucx::parse_endpoint_info(c->endpoint->info());
  if (!p) {
    // No pointer: the endpoint's transports say why (tcp maps nothing). A fall-back FAILs first.
    std::vector<std::string> took;
    for (const ucx::Lane& l : lanes.lanes) took.push_back(l.transport);
    t5::PathFacts facts = t5::path_facts(ctx, took, lanes);
    if (auto why = t5::path_failure(facts)) {
      stop_row(half.rep.facts, ErrorKind::driver, *why);
    } else {
      stop_row(half.rep.facts, p.error().kind,
               fmt::format("{}; UCX's transports on this endpoint: {}; {}", why_of(p.error()), fmt::join(took, ","),
                           lanes.raw));
    }
    return half.finish();
  }
  leg.attempted = true;
  std::span<std::byte> view(*p, layout.size);
  ctx.step("tell the owner the memory is mapped");
  if (Status s = t5::say_mapped(ctx); !s) {
    fail_leg(leg, s.error());
    return half.finish();
  }
  if (ctx.test_fault("ucp_rkey_ptr", "corrupt"))  // test-only: a wrong byte in the driver's view of region A
    view[layout.offset(Region::A) + 256] ^= std::byte{0xff};
  ctx.step("read region A through the rkey_ptr mapping");
  read_local(view, layout, Region::A, leg);
  ctx.step("write region B through the rkey_ptr mapping");
  pattern::fill(layout.region(view, Region::B), seed_of(Region::B));
  ctx.step("owner checks region B");
  confirm_remote(ctx, Region::B, leg);
  alias_leg(ctx, view, leg);
  ctx.step("measure the rkey_ptr mapping");
  measure::cpu_leg("rkeyptr", view);
  auto [tl, mapping] = mapping_of(*p);
  std::vector<std::string> took;
  if (!tl.empty()) {
    took.push_back(tl);
  } else {
    for (const ucx::Lane& l : lanes.lanes) took.push_back(l.transport);
  }
  leg.note += fmt::format("{}mapping={}", leg.note.empty() ? "" : " ", mapping.empty() ? "(not in /proc/self/maps)" : mapping);
  t5::judge_path(half.rep, leg, t5::path_facts(ctx, took, lanes));
  return half.finish(SoakPlan{0, view, Region::B, Region::A, Region::E, nullptr});
}

constexpr FaultDef kFaults[] = {
    {"corrupt", Role::server, "ucp_rkey_ptr",
     "the driver flips one byte at +256 of region A in its rkey_ptr view before reading it: the row must not be OK "
     "(region A differs at +256)"},
    t5::kStaleFault,
};

const RouteDef kT5UcxRkeyPtr{
    .row = "T5-ucx-rkey-ptr",
    .group = "t5",
    .needs = {},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"maps the owner's memory with ucp_rkey_ptr and drives the checks", server},
    .client = {"ucp_mem_map(ALLOCATE)s, writes A, sends its key and worker address, serves", t5::owner_serve}};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT5UcxRkeyPtr, 280);

}  // namespace extmem::probe
