// One grammar for every length of time given on a command line or in a file:
// `5`, `5s`, `250ms`, `2m`, `1h`, `2.5s`. Every subcommand parses its duration
// options here, so they all accept the same text and refuse it with the same
// message (docs/durations.md).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "extmem/core/error.h"

namespace extmem {

/// The bounds one option accepts, both inclusive, in nanoseconds. Each option
/// states its own (a sampling period of 1ms..1h, a run length of 1ms..366 days).
struct DurationRange {
  std::chrono::nanoseconds min{std::chrono::milliseconds(1)};
  std::chrono::nanoseconds max{std::chrono::hours(24 * 366)};
};

/// Parses a duration: a plain decimal number (digits with at most one '.', at
/// least one digit, no sign, no exponent; at most 9 digits after the '.' and
/// 12 before it) followed by an optional unit, `ms`, `s`, `m` (minutes) or
/// `h`; no unit means seconds. No spaces. The value is truncated to whole
/// nanoseconds and must lie in `range` (inclusive).
///
/// Errors: ErrorKind::invalid_argument, step "duration", code empty, and one
/// detail text for every refusal (a bad number, an unknown or missing unit, a
/// value out of range), naming the text (at most 64 bytes of it) and what is
/// accepted: `"5x" is not accepted: a duration from 1ms to 1h, a number with an
/// optional unit ms, s, m or h (no unit: seconds), e.g. 5, 5s, 250ms, 2m`.
Result<std::chrono::nanoseconds> parse_duration(std::string_view text, DurationRange range = {});

/// The duration in the grammar above, shortest exact form: the largest unit
/// that divides it (`1h`, `2m`, `90s`, `250ms`), else milliseconds with a
/// fraction (`0.5ms`). parse_duration() reads it back to the same value.
std::string format_duration(std::chrono::nanoseconds d);

/// "a duration from MIN to MAX, a number with an optional unit ms, s, m or h
/// (no unit: seconds), e.g. 5, 5s, 250ms, 2m": what an option accepts, for its
/// help text and for the refusal above.
std::string describe_duration(DurationRange range);

}  // namespace extmem
