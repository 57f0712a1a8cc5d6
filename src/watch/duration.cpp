#include "extmem/watch/duration.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace extmem::watch {
namespace {

// A plain decimal "12", "2.5", ".5" (no sign, no exponent, no hex).
bool decimal(std::string_view s, double& out) {
  if (s.empty() || s.size() > 32) return false;
  int dots = 0;
  bool digit = false;
  for (char c : s) {
    if (c == '.') ++dots;
    else if (c >= '0' && c <= '9') digit = true;
    else return false;
  }
  if (dots > 1 || !digit) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::fixed);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

}  // namespace

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  const auto refuse = [&](std::string_view why) {
    return Error{"duration", ErrorKind::invalid_argument, {},
                 fmt::format("\"{}\" {}; accepted: a number with a unit ns, us, ms, s, m (min) or h, e.g. 100ms or 2.5s",
                             text.substr(0, 64), why)};
  };
  std::size_t unit_at = 0;
  while (unit_at < text.size() && ((text[unit_at] >= '0' && text[unit_at] <= '9') || text[unit_at] == '.')) ++unit_at;
  const std::string_view number = text.substr(0, unit_at);
  const std::string_view unit = text.substr(unit_at);
  double value = 0;
  if (!decimal(number, value)) return refuse("is not a number with a unit");
  double ns_per_unit = 0;
  if (unit == "ns") ns_per_unit = 1;
  else if (unit == "us") ns_per_unit = 1e3;
  else if (unit == "ms") ns_per_unit = 1e6;
  else if (unit == "s") ns_per_unit = 1e9;
  else if (unit == "m" || unit == "min") ns_per_unit = 60e9;
  else if (unit == "h") ns_per_unit = 3600e9;
  else if (unit.empty()) return refuse("has no unit");
  else return refuse("has an unknown unit");
  const double ns = std::round(value * ns_per_unit);
  if (!(ns >= 1)) return refuse("is not greater than 0");
  if (ns > 366.0 * 86400e9) return refuse("is longer than 366 days");
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

Result<double> parse_percent(std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && s.back() == '%') s.remove_suffix(1);
  double v = 0;
  if (!decimal(s, v) || !(v > 0 && v <= 100))
    return Error{"percentage", ErrorKind::invalid_argument, {},
                 fmt::format("\"{}\" is not accepted: a number greater than 0 and at most 100, with or without %",
                             text.substr(0, 64))};
  return v / 100.0;
}

std::string format_duration(std::chrono::nanoseconds d) {
  const double ns = static_cast<double>(d.count());
  if (ns < 1e3) return fmt::format("{} ns", d.count());
  if (ns < 1e6) return fmt::format("{:g} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:g} ms", ns / 1e6);
  if (ns < 120e9) return fmt::format("{:g} s", ns / 1e9);
  if (ns < 7200e9) return fmt::format("{:g} min", ns / 60e9);
  return fmt::format("{:g} h", ns / 3600e9);
}

}  // namespace extmem::watch
