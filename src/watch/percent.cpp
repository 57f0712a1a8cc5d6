#include "extmem/watch/percent.h"

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

}  // namespace extmem::watch
