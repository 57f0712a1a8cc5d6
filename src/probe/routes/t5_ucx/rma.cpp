// T5-ucx-rma: ucp_get_nbx and ucp_put_nbx of the whole allocation, both
// directions, bytes compared: region A as the owner wrote it, the whole
// allocation after the owner fills it, a stamp per page put back, region B put
// and checked by the owner. The leg notes the transports and lanes UCX's own
// endpoint description (ucp_ep_print_info) gives for RMA; a path other than
// --expect-transport FAILs ("UCX fell back to tcp"). With --measure, put and
// get bandwidth beside memcpy of the same bytes. docs/probe.md, "T5".
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/routes.h"
#include "probe/routes/route_file.h"
#include "probe/routes/t5_ucx/side.h"
#include "probe/worker/half_end.h"
#include "probe/worker/measure.h"
#include "probe/worker/peer.h"
#include "probe/worker/route_util.h"
#include "probe/worker/whole_alloc.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"rma", true,
     "ucp_get_nbx and ucp_put_nbx of the whole allocation move the owner's bytes to the driver and back, every page"},
};

// Seeds of the whole-allocation rounds (any value but the regions' own).
constexpr std::uint64_t kWholeSeed = 0x7563782d67657400ull;   // "ucx-get"
constexpr std::uint64_t kStampSeed = 0x7563782d70757400ull;   // "ucx-put"

// --measure: put and get of the whole allocation, and memcpy of as many bytes, repeats() times each.
void measure_rma(t5::Connection& c, std::span<std::byte> local) {
  LegFigures* fig = measure::leg("rma");
  if (fig == nullptr) return;
  using clock = std::chrono::steady_clock;
  std::vector<double> put, get, copy;
  std::vector<std::byte> a(local.size()), b(local.size());
  std::memset(a.data(), 1, a.size());
  std::memset(b.data(), 2, b.size());  // both touched: the copy times no page faults
  for (unsigned i = 0; i < measure::repeats(); ++i) {
    auto t0 = clock::now();
    if (Status s = c.endpoint->put(local, c.remote_address, *c.key); !s) {
      fig->rma_error = measure::step_and_code(s.error());
      break;
    }
    auto t1 = clock::now();
    if (Status s = c.endpoint->get(local, c.remote_address, *c.key); !s) {
      fig->rma_error = measure::step_and_code(s.error());
      break;
    }
    auto t2 = clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    auto t3 = clock::now();
    auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
    put.push_back(measure::gbps(local.size(), secs(t1 - t0)));
    get.push_back(measure::gbps(local.size(), secs(t2 - t1)));
    copy.push_back(measure::gbps(local.size(), secs(t3 - t2)));
  }
  if (put.empty()) return;
  measure::measured_bytes(local.size());
  fig->rma_put_gbps = measure::figure(put);
  fig->rma_get_gbps = measure::figure(get);
  fig->memcpy_gbps = measure::figure(copy);
  if (fig->memcpy_gbps->median > 0) {
    fig->rma_put_ratio = fig->rma_put_gbps->median / fig->memcpy_gbps->median;
    fig->rma_get_ratio = fig->rma_get_gbps->median / fig->memcpy_gbps->median;
  }
}

// The leg's byte checks; false when a UCX or peer call failed (recorded in the leg).
bool move_bytes(ChildContext& ctx, t5::Connection& c, std::span<std::byte> local, Leg& leg) {
  const Layout& layout = ctx.layout();
  auto failed = [&](const Error& e) {
    fail_leg(leg, e);
    return false;
  };
  leg.attempted = true;
  ctx.step("ucp_get_nbx(whole allocation)");
  if (Status s = c.endpoint->get(local, c.remote_address, *c.key); !s) return failed(s.error());
  if (ctx.test_fault("ucp_get_nbx", "corrupt"))  // test-only: a wrong byte in what the driver got
    local[layout.offset(Region::A) + 256] ^= std::byte{0xff};
  read_local(local, layout, Region::A, leg);
  ctx.step("owner fills the whole allocation");
  if (Status s = peer_fill(ctx, 0, local.size(), kWholeSeed); !s) return failed(s.error());
  ctx.step("ucp_get_nbx(whole allocation, filled)");
  if (Status s = c.endpoint->get(local, c.remote_address, *c.key); !s) return failed(s.error());
  if (auto at = pattern::first_mismatch(local, kWholeSeed)) {
    leg.read_ok = false;
    leg.note += fmt::format("{}get differs at +{}", leg.note.empty() ? "" : " ", *at);
  }
  ctx.step("ucp_put_nbx(whole allocation, region B)");
  pattern::fill(layout.region(local, Region::B), seed_of(Region::B));
  if (Status s = c.endpoint->put(local, c.remote_address, *c.key); !s) return failed(s.error());
  ctx.step("owner checks region B");
  confirm_remote(ctx, Region::B, leg);
  ctx.step("ucp_put_nbx(whole allocation, a stamp per page)");
  const whole::Plan plan = whole::plan_for(local.size());
  whole::write_stamps(local, plan, kStampSeed, nullptr);
  if (Status s = c.endpoint->put(local, c.remote_address, *c.key); !s) return failed(s.error());
  ctx.step("owner looks for every stamp");
  auto missing = peer_first_missing(ctx, local.size(), kStampSeed);
  if (!missing) return failed(missing.error());
  if (*missing) {
    leg.write_ok = false;
    leg.note += fmt::format("{}put missing at +{}", leg.note.empty() ? "" : " ", **missing);
  }
  return true;
}

int server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg leg = report_leg({kLegs, "rma"});
  DrivingHalf half(ctx, {&leg});
  auto setup = half.start("the owner's UCX memory");
  if (!setup) return half.finish();
  auto c = t5::connect_owner(ctx);
  if (!c) {
    stop_row(half.rep.facts, c.error().kind,
             c.error().kind == ErrorKind::no_driver ? t5::no_ucx_reason(c.error()) : why_of(c.error()));
    return half.finish();
  }
  std::vector<std::byte> local(layout.size);
  const bool moved = move_bytes(ctx, *c, local, leg);
  if (moved) {
    ctx.step("measure put and get");
    measure_rma(*c, local);
  }
  // The path, from UCX's own description of the endpoint after the transfers.
  const ucx::EndpointInfo lanes = ucx::parse_endpoint_info(c->endpoint->info());
  if (lanes.rma_emulated())
    leg.note += fmt::format("{}rma=emulated-over-am", leg.note.empty() ? "" : " ");
  t5::judge_path(half.rep, leg, t5::path_facts(ctx, lanes.rma_transports(), lanes));
  return half.finish();
}

constexpr FaultDef kFaults[] = {
    {"corrupt", Role::server, "ucp_get_nbx",
     "the driver flips one byte at +256 of region A in what ucp_get_nbx brought before comparing it: the row must "
     "not be OK (region A differs at +256)"},
};

const RouteDef kT5UcxRma{
    .row = "T5-ucx-rma",
    .group = "t5",
    .needs = {},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"ucp_get_nbx/ucp_put_nbx of the whole allocation, compares, names UCX's RMA lanes", server},
    .client = {"ucp_mem_map(ALLOCATE)s, writes A, sends its key and worker address, serves", t5::owner_serve}};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT5UcxRma, 290);

}  // namespace extmem::probe
