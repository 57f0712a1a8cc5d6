// What a route child tells the parent at the end: facts, legs, detail. JSON on the wire.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "extmem/core/verdict.h"
#include "extmem/probe/measure_figures.h"

namespace extmem::probe {

struct RouteReport {
  RouteFacts facts;
  std::vector<Leg> legs;
  std::vector<std::string> detail;  ///< "key=value" facts for the RESULT line's detail
  std::optional<Measurement> measure;  ///< --measure figures (measure::collected()); absent when not measuring
};

std::string encode(const RouteReport& report);

/// One calibrated S1 hold as JSON: the wire's and the output document's
/// "sync_holds" entries (docs/probe-result.schema.json).
nlohmann::json sync_hold_json(const SyncHold& h);

/// The inverse of sync_hold_json. Errors (protocol, step "decode report"): not
/// an object, a field missing, mistyped or unknown, a leg name over 32 characters, or
/// hold/wanted/ceiling/over_ceiling that contradict each other.
Result<SyncHold> sync_hold_from_json(const nlohmann::json& j);

/// Parses a report sent by a child. Errors (protocol, step "decode report"):
/// not JSON, missing, mistyped or unknown fields (of the report, a leg, the
/// soak or a sync hold), more than 16 legs, strings over 4 KiB, or a
/// "measure" decode_measurement refuses (step "decode report.measure...").
Result<RouteReport> decode_report(const std::string& payload);

}  // namespace extmem::probe
