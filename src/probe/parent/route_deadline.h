// When a route times out (docs/probe.md, "Faults"). A warm worker opens its
// drivers before it reads its first job, so a half on a new worker (slot B ahead
// of the first route, or one started after a crash or a timeout) spends the start
// of the route starting up, which is no part of the route: the route's time runs
// from the first frame of such a half, and the start-up itself is bounded as
// phase A is, by the longer of the route's time and 60 s.
#pragma once

#include <algorithm>

namespace extmem::probe {

struct RouteDeadline {
  static constexpr double kStartUpFloorS = 60;
  double start_s = 0;  ///< monotonic seconds when the route's jobs were sent
  double route_s = 0;  ///< --timeout plus --soak, seconds
  double latest_first_frame_s = 0;  ///< when the last half on a new worker first answered; 0: none did

  /// How long a new worker may take to start its drivers, seconds.
  double start_up_s() const { return std::max(route_s, kStartUpFloorS); }
  /// The monotonic second at which the route times out; `starting`: an open half
  /// still waits on a worker that has not answered since it started.
  double at(bool starting) const {
    return starting ? start_s + start_up_s() : std::max(start_s, latest_first_frame_s) + route_s;
  }
  /// A half on a new worker sent its first frame at `now_s`.
  void first_frame(double now_s) { latest_first_frame_s = std::max(latest_first_frame_s, now_s); }
};

}  // namespace extmem::probe
