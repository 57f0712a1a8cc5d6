// The --ctrf report: the Common Test Report Format (https://ctrf.io), one test per row.
#include <nlohmann/json.hpp>

#include "extmem/probe/failure_codes.h"
#include "extmem/probe/fleet_write.h"
#include "extmem/version.h"
#include "probe/parent/row_result.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

// CTRF's five statuses: UNSUPPORTED is neither a pass, a failure nor a skip by
// the run's choice, so it is "other" and keeps its own word in rawStatus.
const char* ctrf_status(RowStatus s) {
  switch (s) {
    case RowStatus::ok: return "passed";
    case RowStatus::partial:
    case RowStatus::fail: return "failed";
    case RowStatus::skip: return "skipped";
    case RowStatus::unsupported: return "other";
  }
  return "other";
}

}  // namespace

std::string ctrf_document(const Findings& f, const Health& h, long long start_ms, long long stop_ms) {
  json tests = json::array();
  json counts = {{"passed", 0}, {"failed", 0}, {"skipped", 0}, {"pending", 0}, {"other", 0}};
  for (const RowResult& r : f.rows) {
    const char* status = ctrf_status(r.verdict.status);
    counts[status] = counts[status].get<int>() + 1;
    json t = {{"name", r.row},
              {"status", status},
              {"rawStatus", to_string(r.verdict.status)},
              {"duration", static_cast<long long>(r.seconds * 1000 + 0.5)},
              {"suite", json::array({"extmem probe"})},
              {"device", f.phase_a.device().name}};
    if (!r.verdict.why.empty()) t["message"] = r.verdict.why;
    t["trace"] = result_line(r);
    if (const FailureCode* c = failure_code(r)) {
      t["extra"] = {{"code", c->id}, {"code_class", to_string(c->klass)}, {"code_name", c->name},
                    {"action", c->action}};
      t["tags"] = json::array({std::string(c->id), to_string(c->klass)});
    }
    tests.push_back(std::move(t));
  }
  const vk::DeviceInfo& dev = f.phase_a.device();
  json summary = {{"tests", f.rows.size()},
                  {"passed", counts["passed"]},
                  {"failed", counts["failed"]},
                  {"skipped", counts["skipped"]},
                  {"pending", 0},
                  {"other", counts["other"]},
                  {"start", start_ms},
                  {"stop", stop_ms},
                  {"duration", stop_ms - start_ms}};
  json doc = {{"reportFormat", "CTRF"},
              {"specVersion", "0.0.0"},
              {"generatedBy", "extmem probe"},
              {"results",
               {{"tool", {{"name", "extmem probe"}, {"version", kVersion}}},
                {"summary", summary},
                {"tests", tests},
                {"environment",
                 {{"osPlatform", "linux"},
                  {"osRelease", f.phase_a.context.kernel},
                  {"healthy", h.ok},
                  {"extra", {{"device", dev.name}, {"device_uuid", dev.device_uuid}, {"driver", dev.driver_name},
                             {"driver_version", dev.driver_info}}}}}}}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace extmem::probe
