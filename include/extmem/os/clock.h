// Monotonic time for deadlines and durations.
#pragma once

namespace extmem::os {

/// CLOCK_MONOTONIC in seconds: for deadlines and elapsed time, never for dates.
double monotonic_seconds() noexcept;

}  // namespace extmem::os
