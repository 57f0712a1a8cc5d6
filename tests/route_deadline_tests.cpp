// The route deadline (probe/parent/route_deadline.h): a new worker's driver
// start-up is not counted against the route's --timeout.
#include <gtest/gtest.h>

#include "probe/parent/route_deadline.h"

namespace {

using extmem::probe::RouteDeadline;

// Every worker had answered before: the route has its own time from when its jobs went out.
TEST(RouteDeadline, WarmWorkersTimeTheRouteFromItsStart) {
  RouteDeadline d{100, 3};
  EXPECT_DOUBLE_EQ(d.at(false), 103);
}

// A half on a new worker: the route waits for its start-up, bounded by at least 60 s
// (a --timeout=3 used to end the route while a replacement worker was still opening lavapipe).
TEST(RouteDeadline, NewWorkerStartUpIsBoundedLikePhaseA) {
  RouteDeadline d{100, 3};
  EXPECT_DOUBLE_EQ(d.at(true), 160);
  RouteDeadline long_route{100, 90};
  EXPECT_DOUBLE_EQ(long_route.at(true), 190);
}

// Once the new worker answers, the route gets its whole time from that frame on.
TEST(RouteDeadline, RouteTimeRunsFromTheNewWorkersFirstFrame) {
  RouteDeadline d{100, 3};
  d.first_frame(107.5);
  EXPECT_DOUBLE_EQ(d.at(false), 110.5);
  d.first_frame(105);  // an earlier frame of the other half moves nothing back
  EXPECT_DOUBLE_EQ(d.at(false), 110.5);
}

}  // namespace
