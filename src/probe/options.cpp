// The one place the probe's options are checked: validate() over the whole typed
// record. Its refusals say what is accepted in the words of the public table
// (kOptionWords, probe.h), which the command's text grammar (src/cli/) uses too,
// so a value is refused the same way whether it is not a number or a number out
// of range.
#include <algorithm>

#include <fmt/format.h>

#include "extmem/core/duration.h"
#include "extmem/os/endpoint.h"
#include "extmem/os/file.h"
#include "extmem/probe/probe.h"
#include "probe/fleet_options.h"
#include "probe/gl_driver.h"
#include "probe/layout.h"
#include "probe/parent/plan.h"
#include "probe/routes.h"

namespace extmem::probe {
namespace {

// What each option accepts (kOptionWords), as validate()'s refusals say it.
constexpr const char* kSizeAccepts = accepted_words("--size");
constexpr const char* kMeasureSizeAccepts = accepted_words("--measure-size");
constexpr const char* kRepeatsAccepts = accepted_words("--measure-repeats");
constexpr const char* kJobsAccepts = accepted_words("--jobs");
constexpr const char* kImageSizeAccepts = accepted_words("--image-size");

Error usage(std::string option, std::string detail) {
  return Error{std::move(option), ErrorKind::invalid_argument, {}, std::move(detail)};
}

// validate()'s check of a duration set directly by a library caller, in parse_duration's words.
Status duration_in_range(std::string_view option, std::chrono::nanoseconds d, DurationRange range) {
  if (d >= range.min && d <= range.max) return {};
  return usage(std::string(option), fmt::format("{:g} s is not accepted: {}", std::chrono::duration<double>(d).count(),
                                                describe_duration(range)));
}

const RouteGroup* find_group(std::string_view name) {
  for (const RouteGroup& g : route_groups())
    if (g.name == name) return &g;
  return nullptr;
}

// The group names, or only those --no-GROUP accepts.
std::string joined_groups(bool excludable_only) {
  std::string s;
  for (const RouteGroup& g : route_groups())
    if (!excludable_only || g.excludable) s += fmt::format("{}{}", s.empty() ? "" : ", ", g.name);
  return s;
}

std::string joined_rows() {
  std::string s;
  for (const RouteDef& r : route_table()) s += fmt::format("{}{}", s.empty() ? "" : ", ", r.row);
  return s;
}

}  // namespace

const char* to_string(Isolation isolation) noexcept {
  switch (isolation) {
    case Isolation::none: return "none";
    case Isolation::route: return "route";
  }
  return "unknown";
}

const char* to_string(FdTransportChoice transport) noexcept {
  switch (transport) {
    case FdTransportChoice::scm: return "scm";
    case FdTransportChoice::pidfd: return "pidfd";
    case FdTransportChoice::both: return "both";
  }
  return "unknown";
}

const char* to_string(GlDriverRequest driver) noexcept {
  switch (driver) {
    case GlDriverRequest::automatic: return "auto";
    case GlDriverRequest::system: return "system";
    case GlDriverRequest::zink: return "zink";
    case GlDriverRequest::llvmpipe: return "llvmpipe";
  }
  return "unknown";
}

const char* to_string(ExpectedTransport transport) noexcept {
  switch (transport) {
    case ExpectedTransport::shm: return "shm";
    case ExpectedTransport::posix: return "posix";
    case ExpectedTransport::sysv: return "sysv";
    case ExpectedTransport::cma: return "cma";
    case ExpectedTransport::tcp: return "tcp";
  }
  return "unknown";
}

std::string to_string(const MemoryTypeChoice& choice) {
  switch (choice.mode) {
    case MemoryTypeChoice::Mode::automatic: return "auto";
    case MemoryTypeChoice::Mode::all: return "all";
    case MemoryTypeChoice::Mode::index: return std::to_string(choice.type_index);
  }
  return "unknown";
}

std::vector<std::string> row_names() {
  std::vector<std::string> out;
  for (const RouteDef& r : route_table()) out.emplace_back(r.row);
  return out;
}

Status validate(const ProbeOptions& o) {
  if (o.size % 4096 != 0 || o.size < kMinSize)
    return usage("--size", fmt::format("{} bytes is not accepted: {}", o.size, kSizeAccepts));
  if (auto s = duration_in_range("--soak", o.soak, kSoakRange); !s) return s;
  if (auto s = duration_in_range("--timeout", o.timeout, kTimeoutRange); !s) return s;
  for (const std::string& r : o.only) {
    if (find_route(r)) continue;
    // A run's printed name (ROW@mtN, ROW@pidfd, ROW@mtN@pidfd) pasted back: say which row and which option.
    // The longest row name followed by '@' (a row's own name may hold one: T4-image-opaque-fd@linear).
    std::size_t at = 0;
    for (const RouteDef& def : route_table())
      if (r.size() > def.row.size() && r.compare(0, def.row.size(), def.row) == 0 && r[def.row.size()] == '@')
        at = std::max(at, def.row.size());
    if (const std::string suffix = r.substr(at);
        at > 0 && (suffix.find("@mt") != std::string::npos || suffix.find("@pidfd") != std::string::npos)) {
      std::vector<std::string> from;
      if (suffix.find("@mt") != std::string::npos) from.emplace_back("--memory-type=INDEX or all gives the @mtN runs");
      if (suffix.find("@pidfd") != std::string::npos) from.emplace_back("--fd-transport=pidfd or both gives the @pidfd runs");
      return usage("--only", fmt::format("\"{}\" is a run of row \"{}\", not a row name: --only takes the plain row "
                                         "name (--only={}){}{}",
                                         r, r.substr(0, at), r.substr(0, at), from.empty() ? "" : "; ",
                                         fmt::join(from, "; ")));
    }
    return usage("--only", fmt::format("unknown row \"{}\"; rows: {}", r, joined_rows()));
  }
  for (const std::string& g : o.groups)
    if (!find_group(g)) return usage("--only-GROUP", fmt::format("unknown group \"{}\"; groups: {}", g, joined_groups(false)));
  for (const std::string& g : o.excluded_groups)
    if (const RouteGroup* found = find_group(g); !found || !found->excludable)
      return usage("--no-GROUP", fmt::format("\"{}\" cannot be excluded; groups that can: {}", g, joined_groups(true)));
  // A selection that can select no row would run nothing and exit 0, which reads as a pass.
  if (!o.only.empty() || !o.groups.empty() || !o.excluded_groups.empty()) {
    bool any = false;
    for (const RouteDef& r : route_table()) any = any || !filtered_out(r, o);
    if (!any)
      return usage(!o.only.empty() ? "--only" : !o.groups.empty() ? "--only-GROUP" : "--no-GROUP",
                   "the selection selects no row (each row must be named by --only, be in an --only-GROUP group "
                   "and not in a --no-GROUP group); accepted: a selection of at least one row, e.g. --only-GROUP "
                   "with --only naming rows of that group, or --only alone");
  }
  // Fail now rather than after a long run: the files must be creatable.
  if (!o.json_path.empty())
    if (std::string problem = os::creatable_problem(o.json_path); !problem.empty()) return usage("--json", problem);
  if (!o.junit_path.empty())
    if (std::string problem = os::creatable_problem(o.junit_path); !problem.empty()) return usage("--junit", problem);
  if (!o.output_path.empty())
    if (std::string problem = os::creatable_problem(o.output_path); !problem.empty()) return usage("--output", problem);
  if (!o.verdict_path.empty())
    if (std::string problem = os::creatable_problem(o.verdict_path); !problem.empty())
      return usage("--verdict-file", problem);
  if (o.image_width == 0 || o.image_height == 0 || o.image_width > kMaxImageSide || o.image_height > kMaxImageSide)
    return usage("--image-size", fmt::format("{}x{} is not accepted: {}", o.image_width, o.image_height, kImageSizeAccepts));
  if (o.measure_size % 4096 != 0 || o.measure_size < (1u << 20) || o.measure_size > (1u << 30))
    return usage("--measure-size", fmt::format("{} bytes is not accepted: {}", o.measure_size, kMeasureSizeAccepts));
  if (o.measure_repeats < 1 || o.measure_repeats > 100)
    return usage("--measure-repeats", fmt::format("{} is not accepted: {}", o.measure_repeats, kRepeatsAccepts));
  if (o.jobs > 64) return usage("--jobs", fmt::format("{} is not accepted: {}", o.jobs, kJobsAccepts));
  if (!o.peer.empty()) {
    if (auto e = os::parse_endpoint(o.peer); !e) return usage("--peer", fmt::format("\"{}\": {}", o.peer, e.error().detail));
    // The serving side keeps its workers warm; fresh processes per route there are not built.
    if (o.isolate == Isolation::route)
      return usage("--isolate", "route is not accepted with --peer: the serving side runs its halves on warm workers; "
                                "accepted: none (the default)");
  }
  if (!gl_driver_name_ok(to_string(o.gl_driver)))  // a value cast from outside the enumeration
    return usage("--gl-driver", fmt::format("{} is not accepted: {}", static_cast<int>(o.gl_driver), kGlDriverAccepts));
  return validate_fleet(o);
}

}  // namespace extmem::probe
