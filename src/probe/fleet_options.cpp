// --require, --require-group, --expect, --prometheus, --ctrf: parsed and checked
// in the words options.cpp uses, before anything runs.
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

// "A,B,,C" -> A, B, C appended to `out`; false when no name is left.
bool append_names(const std::string& text, std::vector<std::string>& out) {
  std::size_t before = out.size(), start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out.size() > before;
}

std::string all_groups() {
  std::string s;
  for (const RouteGroup& g : route_groups()) s += fmt::format("{}{}", s.empty() ? "" : ", ", g.name);
  return s;
}

}  // namespace

std::optional<Status> parse_fleet_option(ProbeOptions& o, std::string_view name, const std::string& text) {
  if (name == "--require" || name == "--require-group") {
    if (!append_names(text, name == "--require" ? o.require : o.require_groups))
      return fleet_usage(name, fmt::format("\"{}\" names nothing; accepted: comma-separated {}", text,
                                     name == "--require" ? "row names" : "group names"));
    return Status{};
  }
  if (name == "--expect" || name == "--prometheus" || name == "--ctrf") {
    if (text.empty()) return fleet_usage(name, "the path is empty; accepted: a file path");
    (name == "--expect" ? o.expect_path : name == "--prometheus" ? o.prometheus_path : o.ctrf_path) = text;
    return Status{};
  }
  return std::nullopt;
}

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
