// A leg a route reports must be one its table declares, [D]/[i] as declared:
// the parent's check (undeclared_leg) and the legs a half makes from the table
// (report_leg, route_leg). The compile-time refusal is lint.undeclared_leg.
#include <gtest/gtest.h>

#include <vector>

#include "extmem/os/ipc.h"
#include "probe/routes.h"

namespace {

using namespace extmem;
using namespace extmem::probe;

constexpr LegDef kLegs[] = {{"mmap", true, "shares the bytes"}, {"gpu", false, "the GPU sees them"}};

TEST(UndeclaredLeg, LegsFromTheTableCarryItsDecisiveFlag) {
  const Leg mmap = report_leg({kLegs, "mmap"});
  const Leg gpu = report_leg({kLegs, "gpu"});
  EXPECT_EQ(mmap.name, "mmap");
  EXPECT_TRUE(mmap.decisive);
  EXPECT_EQ(gpu.name, "gpu");
  EXPECT_FALSE(gpu.decisive);
}

// The real T1-opaque-fd entry: its legs pass (the control), a leg it does not
// list and a listed leg with the other flag are each named.
TEST(UndeclaredLeg, ParentNamesTheLegTheTableLacks) {
  const RouteDef* route = find_route("T1-opaque-fd");
  ASSERT_NE(route, nullptr);
  std::vector<Leg> legs;
  for (const LegDef& d : route->legs) legs.push_back(Leg{std::string(d.name), d.decisive});
  EXPECT_EQ(undeclared_leg(*route, legs), "");
  legs.push_back(Leg{"cudaimport", true});
  EXPECT_EQ(undeclared_leg(*route, legs), "leg 'cudaimport' is not in the route's table");
  legs.pop_back();
  legs[0].decisive = !legs[0].decisive;
  EXPECT_EQ(undeclared_leg(*route, legs),
            "leg 'rawmmap' is [i] in the route's table, reported [D]");
}

// A half shared by rows takes each leg from the table of the row it runs.
TEST(UndeclaredLeg, SharedHalfTakesTheRunningRowsTable) {
  auto peer = *os::Channel::pair();
  auto parent = *os::Channel::pair();
  ChildContext opaque(HalfParams{"T1-opaque-fd", Role::client}, std::move(peer.first), std::move(parent.first));
  EXPECT_FALSE(route_leg(opaque, "rawmmap").decisive);
  auto peer2 = *os::Channel::pair();
  auto parent2 = *os::Channel::pair();
  ChildContext dma_buf(HalfParams{"T1-dma-buf", Role::client}, std::move(peer2.first), std::move(parent2.first));
  EXPECT_TRUE(route_leg(dma_buf, "rawmmap").decisive);
}

}  // namespace
