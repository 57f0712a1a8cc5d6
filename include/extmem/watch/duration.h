// Durations and percentages as `extmem watch` accepts them on its command line.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "extmem/core/error.h"

namespace extmem::watch {

/// Parses a duration with its unit: a decimal number followed by one of
/// ns, us, ms, s, m (or min), h — "100ms", "2.5s", "1m", "500us". The unit is
/// required; the result is rounded to whole nanoseconds and must be > 0 and at
/// most 366 days. Errors (invalid_argument, step "duration"): the detail says
/// what is accepted.
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

/// Parses a percentage "1.5" or "1.5%" into a fraction (0.015). Must be > 0
/// and <= 100. Errors (invalid_argument, step "percentage").
Result<double> parse_percent(std::string_view text);

/// "100 ms", "2.5 s", "1 min 30 s"-style short text for a duration (for messages).
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace extmem::watch
