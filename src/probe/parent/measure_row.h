// The parent's side of --measure: which figures of the measuring run belong to
// a row, and the row's `measure:` text line. The verdict never looks here.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "probe/parent/row_result.h"

namespace extmem::probe {

/// Whether any leg of `r` round-tripped (only such rows get a measuring run).
bool has_round_trip(const RowResult& r);

/// The row's "measure" object: the measuring run's figures (probe/measure.h
/// collected()) for the legs that round-tripped in the verdict run `verdict`
/// only, plus "run_status" (the measuring run's own status, for the record)
/// and, when the measuring run brought no figures, "error" with its why text.
nlohmann::json row_measure(const RowResult& verdict, const RowResult& measuring);

/// "  measure: <leg> cpu-write=… (x<ratio> of private …) …; export=… us …"; empty when `m` is null.
/// Figures are medians with [min-max]; GB/s = 1e9 bytes per second; latencies in µs.
std::string measure_line(const nlohmann::json& m);

}  // namespace extmem::probe
