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
    {"t5", "the T5 (transport library: UCX) rows", false},
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

const FaultDef* RouteDef::fault(std::string_view action) const {
  for (const FaultDef& f : faults)
    if (f.action == action) return &f;
  return nullptr;
}

Leg report_leg(DeclaredLeg declared) { return Leg{std::string(declared.def.name), declared.def.decisive}; }

Leg route_leg(const ChildContext& ctx, std::string_view name) {
  if (const RouteDef* route = find_route(ctx.params().row))
    if (const LegDef* def = route->leg(name)) return Leg{std::string(def->name), def->decisive};
  return Leg{std::string(name), true};
}

std::string undeclared_leg(const RouteDef& route, std::span<const Leg> reported) {
  for (const Leg& l : reported) {
    const LegDef* def = route.leg(l.name);
    if (def == nullptr) return fmt::format("leg '{}' is not in the route's table", l.name);
    if (def->decisive != l.decisive)
      return fmt::format("leg '{}' is {} in the route's table, reported {}", l.name, def->decisive ? "[D]" : "[i]",
                         l.decisive ? "[D]" : "[i]");
  }
  return {};
}

}  // namespace extmem::probe
