#include "probe/routes.h"

#include <fmt/format.h>

namespace extmem::probe {

namespace {
constexpr RouteGroup kGroups[] = {
    {"t0", "the T0 (Android AHardwareBuffer) rows", false},
    {"t1", "the T1 (Vulkan export) rows", false},
    {"t3", "the T3 (host memory) rows", false},
    {"t4", "the T4 (image) rows", false},
    {"gles", "the GLES rows", true},
    {"s1", "the S1 (GPU sync across processes) rows", false},
};
}  // namespace

// route_table() is generated from the route files (cmake/route_table.cmake).

std::span<const RouteGroup> route_groups() { return kGroups; }

const RouteDef* find_route(std::string_view row) {
  for (const RouteDef& r : route_table())
    if (r.row == row) return &r;
  return nullptr;
}

std::string no_cuda_driver_reason(const Error& e) { return fmt::format("no CUDA driver ({}: {})", e.step, e.detail); }

const LegDef* RouteDef::leg(std::string_view name) const {
  for (const LegDef& l : legs)
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace extmem::probe
