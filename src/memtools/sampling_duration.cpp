#include "extmem/memtools/sampling_duration.h"

#include <cmath>

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {

Result<std::chrono::microseconds> parse_sampling_duration(std::string_view text, SyntaxError* syntax) {
  const auto refuse = [&](std::size_t column, std::string problem) -> Error {
    return detail::syntax_failure(syntax, "duration", text, column, std::move(problem), kSamplingDurationAccepted);
  };
  // Digits and at most one '.', read by hand: strtod would take signs,
  // exponents, "inf" and hexadecimal, none of which is a duration here.
  std::size_t i = 0;
  double whole = 0, scale = 1;
  bool digits = false, dot = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      if (dot) {
        scale /= 10;
        whole += (c - '0') * scale;
      } else {
        whole = whole * 10 + (c - '0');
        if (whole > 1e12) return refuse(i, "the number is too large");
      }
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!digits) return refuse(i, fmt::format("expected a number, found {}", detail::quote_char(text, i)));
  const std::string_view unit = text.substr(i);
  double us_per_unit = 0;
  if (unit.empty() || unit == "s") us_per_unit = 1e6;
  else if (unit == "us") us_per_unit = 1;
  else if (unit == "ms") us_per_unit = 1e3;
  else if (unit == "m" || unit == "min") us_per_unit = 60e6;
  else if (unit == "h") us_per_unit = 3600e6;
  else return refuse(i, fmt::format("unknown unit \"{}\"", unit.substr(0, 16)));
  const double us = std::round(whole * us_per_unit);
  if (us < 1) return refuse(0, "the duration is shorter than 1 us");
  if (us > 366.0 * 86400e6) return refuse(0, "the duration is longer than 366 days");
  return std::chrono::microseconds(static_cast<std::int64_t>(us));
}

std::string describe_duration(std::chrono::microseconds d) {
  const double us = static_cast<double>(d.count());
  if (us < 1e3) return fmt::format("{} us", d.count());
  if (us < 1e6) return fmt::format("{:g} ms", us / 1e3);
  if (us < 120e6) return fmt::format("{:g} s", us / 1e6);
  if (us < 7200e6) return fmt::format("{:g} min", us / 60e6);
  return fmt::format("{:g} h", us / 3600e6);
}

}  // namespace extmem::memtools
