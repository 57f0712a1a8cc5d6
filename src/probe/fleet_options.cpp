// --require, --require-group, --expect, --prometheus, --ctrf: checked in the words
// options.cpp uses, before anything runs.
#include "probe/fleet_options.h"

#include <fmt/format.h>

#include "extmem/os/file.h"
#include "extmem/probe/health.h"
#include "probe/routes.h"

namespace extmem::probe {
namespace {

Error fleet_usage(std::string_view option, std::string detail) {
  return Error{std::string(option), ErrorKind::invalid_argument, {}, std::move(detail)};
}

std::string all_groups() {
  std::string s;
  for (const RouteGroup& g : route_groups()) s += fmt::format("{}{}", s.empty() ? "" : ", ", g.name);
  return s;
}

}  // namespace

Status validate_fleet(const ProbeOptions& o) {
  for (const std::string& r : o.require)
    if (!is_row_or_run_name(r))
      return fleet_usage("--require", fmt::format("unknown row \"{}\"; accepted: a row of `extmem probe --list-routes` or "
                                            "a printed run of one (ROW@pidfd, ROW@mtN)",
                                            r));
  for (const std::string& g : o.require_groups) {
    bool known = false;
    for (const RouteGroup& group : route_groups()) known = known || group.name == g;
    if (!known) return fleet_usage("--require-group", fmt::format("unknown group \"{}\"; groups: {}", g, all_groups()));
  }
  if (!o.expect_path.empty())
    if (auto b = read_baseline(o.expect_path); !b) return b.error();
  if (!o.prometheus_path.empty())
    if (std::string problem = os::creatable_problem(o.prometheus_path); !problem.empty())
      return fleet_usage("--prometheus", problem);
  if (!o.ctrf_path.empty())
    if (std::string problem = os::creatable_problem(o.ctrf_path); !problem.empty()) return fleet_usage("--ctrf", problem);
  return {};
}

}  // namespace extmem::probe
