// The parent's side of --measure: which figures of the measuring run belong to
// a row, and the row's `measure:` text line. The verdict never looks here.
#pragma once

#include <string>

#include "extmem/probe/measure_figures.h"
#include "probe/parent/row_result.h"

namespace extmem::probe {

/// Whether any leg of `r` round-tripped (only such rows get a measuring run).
bool has_round_trip(const RowResult& r);

/// The row's measure: the measuring run `measuring`'s figures for the legs
/// that round-tripped in the verdict run `verdict` only (a leg it has no
/// figures for gets empty ones), and the measuring run's own status, for the
/// record; when the measuring run brought no figures, `error` is its why text.
RowMeasure row_measure(const RowResult& verdict, const RowResult& measuring);

/// "  measure: <leg> cpu-write=… (x<ratio> of private …) …; export=… us …".
/// Figures are medians with [min-max]; GB/s = 1e9 bytes per second; latencies in µs.
std::string measure_line(const RowMeasure& m);

}  // namespace extmem::probe
