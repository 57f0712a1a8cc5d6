// The JSON writer: the --json document (docs/probe-result.schema.json), from what find() returned.
#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/probe/failure_codes.h"
#include "extmem/version.h"
#include "extmem/probe/health.h"
#include "extmem/probe/write.h"
#include "probe/done_codec.h"
#include "probe/measure_codec.h"
#include "probe/route_report.h"
#include "probe/parent/junit.h"
#include "probe/phase_a_codec.h"
#include "probe/serve/session_codec.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

// A duration option as the document has always carried it: seconds, a number.
double option_seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

json leg_json(const Leg& l) {
  return {{"name", l.name}, {"decisive", l.decisive}, {"attempted", l.attempted}, {"read_ok", l.read_ok},
          {"write_ok", l.write_ok}, {"value", l.trace_value()}, {"failed_step", l.failed_step}, {"code", l.code},
          {"note", l.note}};
}

json code_json(const FailureCode& c) {
  return {{"id", c.id}, {"class", to_string(c.klass)}, {"name", c.name}, {"action", c.action}};
}

// The run's health as docs/probe-result.schema.json's "health": what --npd and the text's health section say;
// `baseline`: whether a --expect baseline was assessed.
json health_json(const Health& h, const ProbeOptions& o, bool baseline) {
  json problems = json::array();
  for (const HealthProblem& p : h.problems)
    problems.push_back({{"row", p.row}, {"status", p.status}, {"expected", p.expected.empty() ? json(nullptr) : json(p.expected)},
                        {"code", code_json(*p.code)}, {"step", p.step}, {"why", p.why}});
  const bool required = !o.require.empty() || !o.require_groups.empty();
  return {{"ok", h.ok}, {"rule", required ? "required" : "plain"}, {"baseline", baseline},
          {"required", h.required}, {"problems", std::move(problems)}};
}

json row_json(const RowResult& r) {
  json legs = json::array();
  for (const Leg& l : r.legs) legs.push_back(leg_json(l));
  json j = {{"row", r.row}, {"status", to_string(r.verdict.status)}, {"why", r.verdict.why}, {"trace", trace(r.legs)},
          {"legs", legs}, {"detail", r.detail}, {"seconds", r.seconds},
          {"soak", r.soak ? json{{"stale", r.soak->stale}, {"words", r.soak->words}, {"rounds", r.soak->rounds}} : json(nullptr)},
          {"last_step", {{"server", r.server_step}, {"client", r.client_step}}}};
  if (!r.sync_holds.empty()) {
    json holds = json::array();
    for (const SyncHold& h : r.sync_holds) holds.push_back(sync_hold_json(h));
    j["sync_holds"] = std::move(holds);
  }
  if (r.measure) j["measure"] = to_json(*r.measure);
  j["code"] = nullptr;
  if (const FailureCode* c = failure_code(r)) j["code"] = code_json(*c);
  if (r.worker_hygiene) {
    json halves = json::object();
    if (r.worker_hygiene->server) halves["server"] = hygiene_json(*r.worker_hygiene->server);
    if (r.worker_hygiene->client) halves["client"] = hygiene_json(*r.worker_hygiene->client);
    j["worker_hygiene"] = std::move(halves);
  }
  return j;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}


}  // namespace

std::string json_document(const Findings& f, const ProbeOptions& o, const Health* health) {
  json jrows = json::array();
  for (const RowResult& r : f.rows) jrows.push_back(row_json(r));
  const bool no_gles = std::find(o.excluded_groups.begin(), o.excluded_groups.end(), "gles") != o.excluded_groups.end();
  json doc = {{"schema", "extmem-probe-result"},
              {"schema_version", kJsonSchemaVersion},
              {"tool_version", kVersion},
              {"generated_at", utc_now()},
              {"options",
               {{"size", o.size}, {"regions_at_end", o.regions_at_end}, {"timeout_s", option_seconds(o.timeout)}, {"soak_s", option_seconds(o.soak)},
                {"device", o.device}, {"only", o.only}, {"groups", o.groups}, {"no_gles", no_gles},
                {"memory_type", to_string(o.memory_type)}, {"gl_driver", to_string(o.gl_driver)}, {"measure", o.measure}, {"measure_size", o.measure_size},
                {"measure_repeats", o.measure_repeats}, {"fd_transport", to_string(o.fd_transport)},
                {"image_size", fmt::format("{}x{}", o.image_width, o.image_height)}}},
              {"rows", jrows},
              {"health", health != nullptr ? health_json(*health, o, !o.expect_path.empty()) : health_json(assess(f, o, nullptr), o, false)},
              {"exit_code", f.exit_code()}};
  doc.update(phase_a_json(f.phase_a));  // context, vulkan, gl_driver, gles, cuda, fd_transport
  if (const auto& p = f.phase_a.peer)
    doc["peer"] = {{"endpoint", p->endpoint}, {"run_id", p->run_id},
                   {"peer_build", p->peer_build}, {"served_role", p->served_role},
                   {"here", side_context_json(p->here)}, {"peer", side_context_json(p->peer)},
                   {"boundary", boundary_json(p->boundary)}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string junit_document(const Findings& f) { return junit_xml(f.rows, f.phase_a.device().name); }

}  // namespace extmem::probe
