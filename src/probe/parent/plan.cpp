#include "probe/parent/plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace extmem::probe {
namespace {

#ifdef __ANDROID__
constexpr bool kAndroidBuild = true;
#else
constexpr bool kAndroidBuild = false;
#endif

bool contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

bool selected(const ProbeOptions& o, std::string_view row) {
  // A twin ("T1-opaque-fd@mt2@pidfd") is selected with its row; some rows have an
  // '@' of their own ("T4-image-opaque-fd@linear"), so suffixes go one at a time.
  const RouteDef* route = find_route(row);
  while (route == nullptr && row.find('@') != std::string_view::npos) {
    row = row.substr(0, row.rfind('@'));
    route = find_route(row);
  }
  if (route == nullptr) return true;  // not a row of the table: nothing decides it away
  return (o.only.empty() || contains(o.only, route->row)) && (o.groups.empty() || contains(o.groups, route->group));
}

std::optional<std::string> filtered_out(const RouteDef& route, const ProbeOptions& o) {
  if (!o.only.empty() && !contains(o.only, route.row)) return "not selected by --only";
  if (!o.groups.empty() && !contains(o.groups, route.group))
    return fmt::format("not selected by --only-{}", fmt::join(o.groups, "/--only-"));
  if (contains(o.excluded_groups, route.group)) return fmt::format("excluded by --no-{}", route.group);
  return std::nullopt;
}

namespace {

// What phase A alone says of a row, as the facts decide() reads; nullopt when
// the row must run to be decided.
std::optional<RouteFacts> facts_in_phase_a(const RouteDef& route, const ProbeOptions& o, const PhaseAFacts& found) {
  if (!route.skip_reason.empty())
    return RouteFacts{.skip = std::string(route.skip_reason), .stop_basis = Basis::not_built};
  if (route.needs.platform == Platform::android && !kAndroidBuild)
    return RouteFacts{.skip = std::string(kAndroidOnlyReason), .stop_basis = Basis::not_built};
  if (auto why = filtered_out(route, o)) return RouteFacts{.skip = *why, .stop_basis = Basis::not_selected};
  if (found.device == nullptr) return std::nullopt;  // before phase A
  // Not yet known: decided by redecide(), in this same order, once CUDA has enumerated.
  if (route.needs.cuda && found.cuda == nullptr) return std::nullopt;
  if (route.needs.cuda && !*found.cuda && found.cuda->error().kind == ErrorKind::no_driver)
    return RouteFacts{.skip = no_cuda_driver_reason(found.cuda->error()), .stop_kind = ErrorKind::no_driver};
  for (std::string_view wanted : route.needs.extensions) {
    for (const auto& [name, present] : found.device->extensions)
      if (name == wanted && !present)
        return RouteFacts{.unsupported = name + " not exposed by the device", .stop_kind = ErrorKind::unsupported};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Verdict> decided_in_phase_a(const RouteDef& route, const ProbeOptions& o, const PhaseAFacts& found) {
  if (auto facts = facts_in_phase_a(route, o, found)) return decide(*facts, {});
  return std::nullopt;
}

void redecide(std::vector<PlannedRow>& planned, const ProbeOptions& o, const PhaseAFacts& found) {
  for (PlannedRow& row : planned)
    if (!row.decided) row.decided = decided_in_phase_a(*row.route, o, found);
}

std::vector<PlannedRow> plan_rows(const ProbeOptions& o, const std::vector<int>& memory_types, const PhaseAFacts& found) {
  std::vector<PlannedRow> planned;
  const std::vector<int> just_the_row{-1};
  const bool with_scm = o.fd_transport != FdTransportChoice::pidfd, with_pidfd = o.fd_transport != FdTransportChoice::scm;
  for (const RouteDef& route : route_table()) {
    const bool twins = route.memory_types == MemoryTypes::exporter_picks;
    for (int memory_type : twins ? memory_types : just_the_row) {
      std::string name(route.row);
      if (memory_type >= 0) name += memory_type_suffix(static_cast<unsigned>(memory_type));
      const std::optional<Verdict> decided = decided_in_phase_a(route, o, found);
      // A row that passes no fd has no transport to switch: it runs once, under its own name.
      if (with_scm || !route.passes_fds)
        planned.push_back(PlannedRow{name, &route, memory_type, os::FdTransport::scm, decided});
      if (with_pidfd && route.passes_fds)
        planned.push_back(PlannedRow{name + std::string(kPidfdSuffix), &route, memory_type, os::FdTransport::pidfd, decided});
    }
  }
  return planned;
}

}  // namespace extmem::probe

namespace extmem::probe {

void decide_across(std::vector<PlannedRow>& planned, const std::vector<BoundaryFact>& boundary,
                   const os::Endpoint& endpoint) {
  const bool other_pid_ns = differs(boundary, "ns:pid");
  for (PlannedRow& r : planned) {
    if (r.decided) continue;
    RouteFacts facts;
    if (!endpoint.carries_fds() && r.route->passes_fds)
      stop_row(facts, ErrorKind::unsupported,
               fmt::format("the endpoint {} carries bytes, never fds: this row's halves hand each other an fd "
                           "(SCM_RIGHTS needs a Unix socket)",
                           endpoint.text()));
    else if (other_pid_ns && r.fd_transport == os::FdTransport::pidfd)
      stop_row(facts, ErrorKind::unsupported,
               "peer in another PID namespace: pidfd_getfd needs the peer's pid, which names no process here");
    else
      continue;
    r.decided = decide(facts, {});
  }
}

}  // namespace extmem::probe
