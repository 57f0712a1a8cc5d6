// The JSON form of the --measure figures (extmem/probe/measure_figures.h): in
// a route half's report to the parent, in the exporter's setup message to the
// importer, and as a row's "measure" object in the output document. Keys are
// those of the visit_*fields() lists; an absent optional is an absent key.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "extmem/probe/measure_figures.h"

namespace extmem::probe {

nlohmann::json to_json(const Measurement& m);
/// {"run_status", "error"} when the measuring run brought no figures, else
/// {"run_status"} and the figures' keys (size, repeats, baseline, legs, route, pcie_link).
nlohmann::json to_json(const RowMeasure& m);

/// Decodes what to_json(Measurement) writes, strictly: every object has only its
/// keys, each of its type (a whole number where the member is one, a finite
/// number, a string of at most 4096 bytes), at most kMaxMeasuredLegs legs named
/// by words (wire::is_word), a figure with samples has median, min and max and
/// one without has none. Errors: protocol, step "WHAT.<path to the field>".
Result<Measurement> decode_measurement(const nlohmann::json& j, std::string_view what);

/// Most legs one route half measures (a route reports at most 16 legs).
inline constexpr std::size_t kMaxMeasuredLegs = 16;

}  // namespace extmem::probe
