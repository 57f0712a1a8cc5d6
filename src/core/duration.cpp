#include "extmem/core/duration.h"

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace extmem {
namespace {

constexpr std::int64_t kNsPerMs = 1'000'000;
constexpr std::int64_t kNsPerS = 1'000 * kNsPerMs;
constexpr std::int64_t kNsPerM = 60 * kNsPerS;
constexpr std::int64_t kNsPerH = 60 * kNsPerM;

// Nanoseconds per unit, or 0 for a unit outside the grammar.
std::int64_t unit_ns(std::string_view unit) {
  if (unit.empty() || unit == "s") return kNsPerS;
  if (unit == "ms") return kNsPerMs;
  if (unit == "m") return kNsPerM;
  if (unit == "h") return kNsPerH;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "12" "2.5" ".5" "5." times `per_unit`, exactly in integers (a double would
// round "0.1" away from 100ms). False when the text is not such a number or
// the product does not fit.
bool scaled(std::string_view number, std::int64_t per_unit, std::int64_t& ns) {
  const std::size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
  if (whole.size() + frac.size() == 0 || whole.size() > 12 || frac.size() > 9) return false;
  std::int64_t w = 0, f = 0, f_scale = 1;
  for (char c : whole) {
    if (!is_digit(c)) return false;
    w = w * 10 + (c - '0');
  }
  for (char c : frac) {
    if (!is_digit(c)) return false;
    f = f * 10 + (c - '0');
    f_scale *= 10;
  }
  std::int64_t w_ns = 0;
  if (__builtin_mul_overflow(w, per_unit, &w_ns)) return false;
  // f < f_scale <= 1e9 and per_unit <= 3.6e12: split per_unit so the product stays in range.
  const std::int64_t f_ns = (f * (per_unit / f_scale)) + (f * (per_unit % f_scale)) / f_scale;
  return !__builtin_add_overflow(w_ns, f_ns, &ns);
}

}  // namespace

std::string describe_duration(DurationRange range) {
  return fmt::format(
      "a duration from {} to {}, a number with an optional unit ms, s, m or h (no unit: seconds), e.g. 5, 5s, 250ms, 2m",
      format_duration(range.min), format_duration(range.max));
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text, DurationRange range) {
  std::size_t unit_at = 0;
  while (unit_at < text.size() && (is_digit(text[unit_at]) || text[unit_at] == '.')) ++unit_at;
  const std::int64_t per_unit = unit_ns(text.substr(unit_at));
  std::int64_t ns = 0;
  const bool ok = per_unit != 0 && scaled(text.substr(0, unit_at), per_unit, ns) &&
                  ns >= range.min.count() && ns <= range.max.count();
  if (!ok) {
    return Error{"duration", ErrorKind::invalid_argument, {},
                 fmt::format("\"{}\" is not accepted: {}", text.substr(0, 64), describe_duration(range))};
  }
  return std::chrono::nanoseconds(ns);
}

std::string format_duration(std::chrono::nanoseconds d) {
  const std::int64_t ns = d.count();
  if (ns != 0) {
    if (ns % kNsPerH == 0) return fmt::format("{}h", ns / kNsPerH);
    if (ns % kNsPerM == 0) return fmt::format("{}m", ns / kNsPerM);
    if (ns % kNsPerS == 0) return fmt::format("{}s", ns / kNsPerS);
  }
  if (ns % kNsPerMs == 0) return fmt::format("{}ms", ns / kNsPerMs);
  // Sub-millisecond rest: milliseconds with up to six fraction digits, trailing zeros dropped.
  std::string frac = fmt::format("{:06}", (ns < 0 ? -ns : ns) % kNsPerMs);
  while (frac.back() == '0') frac.pop_back();
  return fmt::format("{}{}.{}ms", ns < 0 ? "-" : "", (ns < 0 ? -ns : ns) / kNsPerMs, frac);
}

}  // namespace extmem
