// The public, copied view of the route table (extmem/probe/routes.h).
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/probe/routes.h"
#include "probe/routes.h"

namespace extmem::probe {

std::vector<RouteInfo> routes() {
  std::vector<RouteInfo> out;
  for (const RouteDef& r : route_table()) {
    RouteInfo info;
    info.row = r.row;
    info.group = r.group;
    info.not_built = r.skip_reason;
    info.platform = r.needs.platform == Platform::android ? "android" : "any";
    for (std::string_view e : r.needs.extensions) info.extensions.emplace_back(e);
    for (const HandleNeed& h : r.needs.handle_types)
      info.handle_types.push_back({std::string(h.type), h.feature == HandleFeature::exportable ? "exportable" : "importable"});
    info.gl = r.needs.gl;
    info.cuda = r.needs.cuda;
    info.measured = r.measured;
    for (const LegDef& l : r.legs) info.legs.push_back({std::string(l.name), l.decisive, std::string(l.proves)});
    for (const FaultDef& f : r.faults)
      info.faults.push_back({std::string(f.action), to_string(f.role), std::string(f.step), std::string(f.breaks)});
    info.memory_type_twins = r.memory_types == MemoryTypes::exporter_picks;
    info.server_does = r.server.does;
    info.client_does = r.client.does;
    info.pidfd_twin = r.passes_fds;
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<GroupInfo> groups() {
  std::vector<GroupInfo> out;
  for (const RouteGroup& g : route_groups()) out.push_back({std::string(g.name), std::string(g.rows), g.excludable});
  return out;
}

namespace {
constexpr std::string_view kPidfd = "@pidfd";  // extmem/probe/probe.h's kPidfdSuffix, without that header

// `row` without a trailing "@pidfd".
std::string without_pidfd(const std::string& row) {
  const bool twin = row.size() > kPidfd.size() && row.compare(row.size() - kPidfd.size(), kPidfd.size(), kPidfd) == 0;
  return twin ? row.substr(0, row.size() - kPidfd.size()) : row;
}

// Where "@mt<digits>" starts in `row`, or npos.
std::size_t twin_suffix(const std::string& row) {
  const std::size_t at = row.rfind("@mt");
  if (at == std::string::npos || at + 3 == row.size()) return std::string::npos;
  return row.find_first_not_of("0123456789", at + 3) == std::string::npos ? at : std::string::npos;
}
}  // namespace

std::string base_row(const std::string& full) {
  const std::string row = without_pidfd(full);
  const std::size_t at = twin_suffix(row);
  return at == std::string::npos ? row : row.substr(0, at);
}

bool is_pidfd_twin(const std::string& row) { return without_pidfd(row).size() != row.size(); }

int twin_memory_type(const std::string& full) {
  const std::string row = without_pidfd(full);
  const std::size_t at = twin_suffix(row);
  if (at == std::string::npos || row.size() - at > 5) return -1;  // "@mt" and at most two digits, as --memory-type
  return std::stoi(row.substr(at + 3));
}

std::string routes_json() {
  nlohmann::json jroutes = nlohmann::json::array(), jgroups = nlohmann::json::array();
  for (const RouteInfo& r : routes()) {
    nlohmann::json legs = nlohmann::json::array(), handles = nlohmann::json::array();
    for (const LegInfo& l : r.legs) legs.push_back({{"name", l.name}, {"decisive", l.decisive}, {"proves", l.proves}});
    for (const HandleInfo& h : r.handle_types) handles.push_back({{"type", h.type}, {"feature", h.feature}});
    nlohmann::json faults = nlohmann::json::array();
    for (const FaultInfo& f : r.faults)
      faults.push_back({{"action", f.action}, {"role", f.role}, {"step", f.step}, {"breaks", f.breaks}});
    jroutes.push_back({{"row", r.row}, {"group", r.group}, {"not_built", r.not_built}, {"platform", r.platform},
                       {"extensions", r.extensions}, {"handle_types", handles}, {"gl", r.gl}, {"cuda", r.cuda},
                       {"legs", legs}, {"faults", faults}, {"memory_type_twins", r.memory_type_twins}, {"pidfd_twin", r.pidfd_twin},
                       {"server", r.server_does},
                       {"client", r.client_does}});
  }
  for (const GroupInfo& g : groups()) jgroups.push_back({{"name", g.name}, {"rows", g.rows}, {"excludable", g.excludable}});
  return nlohmann::json{{"groups", jgroups}, {"routes", jroutes}}.dump(2) + "\n";
}

std::string routes_markdown() {
  std::string md = "| row | group | requires | legs | server | client |\n|---|---|---|---|---|---|\n";
  for (const RouteInfo& r : routes()) {
    std::vector<std::string> needs;
    if (r.platform != "any") needs.push_back(r.platform);
    for (const std::string& e : r.extensions) needs.push_back("`" + e + "`");
    for (const HandleInfo& h : r.handle_types) needs.push_back(h.type + " " + h.feature);
    if (r.gl) needs.push_back("GLES");
    if (r.cuda) needs.push_back("CUDA");
    std::vector<std::string> legs;
    for (const LegInfo& l : r.legs)
      legs.push_back(fmt::format("`{}`{}: {}", l.name, l.decisive ? "[D]" : "[i]", l.proves));
    std::string twins;
    if (r.memory_type_twins) twins += " (`@mt<i>`)";
    if (r.pidfd_twin) twins += " (`@pidfd`)";
    md += fmt::format("| `{}`{} | {} | {} | {} | {} | {} |\n", r.row, twins, r.group,
                      needs.empty() ? "—" : fmt::format("{}", fmt::join(needs, ", ")),
                      legs.empty() ? "—" : fmt::format("{}", fmt::join(legs, "<br>")), r.server_does,
                      r.client_does.empty() ? "—" : r.client_does);
  }
  return md;
}

std::string row_name_pattern() {
  std::vector<std::string> rows;
  for (const RouteInfo& r : routes()) rows.push_back(r.row);
  return fmt::format("^({})(@mt[0-9]+)?(@pidfd)?$", fmt::join(rows, "|"));
}

std::string faults_markdown() {
  std::string md = "| row | action | half | step | what it breaks |\n|---|---|---|---|---|\n";
  for (const RouteInfo& r : routes())
    for (const FaultInfo& f : r.faults)
      md += fmt::format("| `{}` | `{}` | {} | `{}` | {} |\n", r.row, f.action, f.role, f.step, f.breaks);
  return md;
}

}  // namespace extmem::probe
