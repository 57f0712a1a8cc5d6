// Required rows, failing closed, and the baseline's differences (docs/fleet.md).
#include "extmem/probe/health.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "extmem/os/file.h"
#include "extmem/probe/routes.h"
#include "probe/routes.h"

namespace extmem::probe {
namespace {

constexpr const char* kBaselineAccepts =
    "lines \"ROW STATUS [device=SUBSTRING] [driver=SUBSTRING]\", STATUS one of OK, PARTIAL, FAIL, "
    "UNSUPPORTED, SKIP; # starts a comment";

// Whether the printed row name `printed` is required by the name `wanted`: the
// same run, or `wanted` is a plain row and `printed` one of its runs (base_row()).
bool requires_row(std::string_view wanted, std::string_view printed) {
  return wanted == printed || base_row(std::string(printed)) == wanted;
}

std::optional<RowStatus> status_named(std::string_view word) {
  for (RowStatus s : {RowStatus::ok, RowStatus::partial, RowStatus::fail, RowStatus::unsupported, RowStatus::skip})
    if (word == to_string(s)) return s;
  return std::nullopt;
}

Error bad_baseline(const std::string& path, int line, const std::string& what) {
  return Error{"--expect", ErrorKind::invalid_argument, {},
               fmt::format("{}:{}: {}; accepted: {}", path, line, what, kBaselineAccepts)};
}

bool has_text(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// The step a fleet operator looks at first: the first failing decisive leg's, else the last one reported.
std::string failing_step(const RowResult& r) {
  for (const Leg& l : r.legs)
    if (l.decisive && !l.failed_step.empty()) return l.failed_step;
  return !r.client_step.empty() ? r.client_step : r.server_step;
}

HealthProblem row_problem(const RowResult& r, const FailureCode* code) {
  return HealthProblem{r.row, code, to_string(r.verdict.status), "", failing_step(r), r.verdict.why};
}

}  // namespace

bool is_row_or_run_name(std::string_view name) {
  return find_route(base_row(std::string(name))) != nullptr;
}

Result<std::vector<Expectation>> read_baseline(const std::string& path) {
  // A baseline names each row once: some KiB.
  auto read = os::read_input_file(path, 1u << 20);
  if (!read) return bad_baseline(path, 0, "cannot be read: " + read.error().message());
  std::istringstream in(*read);
  std::vector<Expectation> out;
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    if (w.size() < 2) return bad_baseline(path, n, fmt::format("\"{}\" has no status", w[0]));
    Expectation e;
    e.line = n;
    e.row = w[0];
    if (!is_row_or_run_name(e.row)) return bad_baseline(path, n, fmt::format("unknown row \"{}\"", e.row));
    auto status = status_named(w[1]);
    if (!status) return bad_baseline(path, n, fmt::format("unknown status \"{}\"", w[1]));
    e.status = *status;
    for (std::size_t i = 2; i < w.size(); ++i) {
      const std::size_t eq = w[i].find('=');
      const std::string key = w[i].substr(0, eq), value = eq == std::string::npos ? "" : w[i].substr(eq + 1);
      if ((key != "device" && key != "driver") || value.empty())
        return bad_baseline(path, n, fmt::format("\"{}\" is not a qualifier", w[i]));
      (key == "device" ? e.device : e.driver) = value;
    }
    out.push_back(std::move(e));
  }
  return out;
}

const Expectation* expectation_for(const std::vector<Expectation>& baseline, std::string_view row,
                                   const vk::DeviceInfo& device) {
  return expectation_for(baseline, row, device.name, device.driver_name, device.driver_info);
}

const Expectation* expectation_for(const std::vector<Expectation>& baseline, std::string_view row,
                                   std::string_view device_name, std::string_view driver_name,
                                   std::string_view driver_info) {
  const Expectation* best = nullptr;
  int best_qualifiers = -1;
  for (const Expectation& e : baseline) {
    if (e.row != row) continue;
    if (!e.device.empty() && !has_text(device_name, e.device)) continue;
    if (!e.driver.empty() && !has_text(driver_name, e.driver) && !has_text(driver_info, e.driver))
      continue;
    const int q = int(!e.device.empty()) + int(!e.driver.empty());
    if (q > best_qualifiers) best = &e, best_qualifiers = q;
  }
  return best;
}

Health assess(const Findings& f, const ProbeOptions& o, const std::vector<Expectation>* baseline) {
  Health h;
  const bool required_given = !o.require.empty() || !o.require_groups.empty();
  if (required_given) {
    // Each required name must match at least one row: a name that matches none fails closed.
    for (const std::string& wanted : o.require) {
      bool any = false;
      for (const RowResult& r : f.rows)
        if (requires_row(wanted, r.row)) any = true;
      if (!any)
        h.problems.push_back({wanted, find_failure_code("EM105"), "absent", "", "",
                              "no row of this run is " + wanted});
    }
    for (const RowResult& r : f.rows) {
      const RouteDef* def = find_route(base_row(r.row));
      const bool by_name = std::any_of(o.require.begin(), o.require.end(),
                                       [&](const std::string& w) { return requires_row(w, r.row); });
      const bool by_group = def != nullptr && std::find(o.require_groups.begin(), o.require_groups.end(),
                                                        def->group) != o.require_groups.end();
      if (!by_name && !by_group) continue;
      h.required.push_back(r.row);
      if (r.verdict.status == RowStatus::ok) continue;
      h.problems.push_back(
          row_problem(r, r.verdict.status == RowStatus::skip ? find_failure_code("EM106") : failure_code(r)));
    }
  } else {
    // A failure the baseline expects is reported as the baseline's (not) difference below.
    for (const RowResult& r : f.rows) {
      const Expectation* e = baseline ? expectation_for(*baseline, r.row, f.phase_a.device()) : nullptr;
      if (is_failure(r.verdict.status) && e == nullptr) h.problems.push_back(row_problem(r, failure_code(r)));
    }
  }
  if (baseline != nullptr) {
    for (const RowResult& r : f.rows) {
      const Expectation* e = expectation_for(*baseline, r.row, f.phase_a.device());
      if (e == nullptr || e->status == r.verdict.status) continue;
      HealthProblem p = row_problem(r, find_failure_code("EM107"));
      p.expected = to_string(e->status);
      h.problems.push_back(std::move(p));
    }
  }
  h.ok = h.problems.empty();
  return h;
}

int exit_code(const Health& h) { return h.ok ? kExitOk : kExitFailed; }

}  // namespace extmem::probe
