// Developer tracing of the probe engine's timeline (docs/probe-engine.md, "Tracing
// start-up"): where a run's wall time goes across the probe and its workers.
#pragma once

#include <string_view>

namespace extmem::probe::tracing {

/// With EXTMEM_PROBE_TRACE=FILE in the environment, appends one line
/// "<CLOCK_MONOTONIC seconds, 6 decimals> <pid> <event>" to FILE; otherwise does nothing.
/// Every process of a run (probe, workers, fresh children) appends to the same file
/// with O_APPEND and one write(2) per line, so lines do not interleave and the clock
/// is shared. The file is opened on the first call and kept (O_CLOEXEC): call it once
/// early in a process (tracing::event("start")) so the descriptor exists before any fd
/// hygiene snapshot. Errors are ignored: tracing never changes a run's outcome.
void event(std::string_view what) noexcept;

}  // namespace extmem::probe::tracing
