// Durations on the command lines of `extmem threads` and `extmem fds`
// (--sample, --period, --duration). One function in one place: when a shared
// duration parser lands in core, this is the only definition to swap.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// What parse_sampling_duration accepts, one line for error messages.
inline constexpr std::string_view kSamplingDurationAccepted =
    "a number of seconds (5, 0.5) or a number with a unit us, ms, s, m or h (250ms, 2m)";

/// Parses a duration: a decimal number (fraction allowed, no sign) with an
/// optional unit us, ms, s, m (minutes) or h; no unit means seconds. The result
/// is rounded to whole microseconds and must lie in [1 us, 366 days].
/// Errors: invalid_argument, step "parse duration"; `syntax`, when not null,
/// receives the column of the offending character.
Result<std::chrono::microseconds> parse_sampling_duration(std::string_view text, SyntaxError* syntax = nullptr);

/// "250 ms", "1.5 s", "2 min" for messages (microsecond resolution).
std::string describe_duration(std::chrono::microseconds d);

}  // namespace extmem::memtools
