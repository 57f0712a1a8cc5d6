// Fuzzes the parsers behind the command-line values: numbers (addresses,
// quantities such as sizes and offsets, word values), widths, pids, poll
// conditions, durations, percentages and series formats. The first byte picks
// the parser, the rest is the text. Accepted values must obey the parser's
// contract; refused ones must point inside the input and render a caret.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/core/duration.h"
#include "extmem/memtools/poll.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/syntax.h"
#include "extmem/watch/percent.h"
#include "extmem/watch/series.h"

namespace {

using namespace extmem::memtools;

void check_refusal(const SyntaxError& s, std::string_view text) {
  if (s.column > text.size() || s.input != text || s.accepted.empty()) __builtin_trap();
  if (s.render("--x").find('^') == std::string::npos) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const unsigned widths[] = {1, 2, 4, 8};
  const unsigned width = widths[(data[0] >> 4) & 3];
  SyntaxError syntax;
  switch (data[0] % 9) {
    case 0:
    case 1:
    case 2: {
      const NumberStyle style = data[0] % 9 == 0 ? NumberStyle::address
                                : data[0] % 9 == 1 ? NumberStyle::quantity
                                                   : NumberStyle::value;
      auto n = parse_number(text, style, "number", &syntax);
      if (!n) {
        check_refusal(syntax, text);
      } else if (style == NumberStyle::quantity) {
        // format_size promises a text that parses back to the same count.
        auto back = parse_number(format_size(*n), NumberStyle::quantity);
        if (!back || *back != *n) __builtin_trap();
      }
      break;
    }
    case 3: {
      auto w = parse_width(text, &syntax);
      if (w ? !valid_width(*w) : (check_refusal(syntax, text), false)) __builtin_trap();
      break;
    }
    case 4: {
      auto v = parse_word_value(text, width, "value", &syntax);
      if (v ? *v > max_word_value(width) : (check_refusal(syntax, text), false)) __builtin_trap();
      break;
    }
    case 5: {
      auto p = parse_pid(text, &syntax);
      if (p ? *p <= 0 : (check_refusal(syntax, text), false)) __builtin_trap();
      break;
    }
    case 6: {
      auto c = parse_condition(text, width, &syntax);
      if (c ? c->value > max_word_value(width) : (check_refusal(syntax, text), false)) __builtin_trap();
      break;
    }
    case 7: {
      // Within the bounds, and what format_duration writes reads back to the same value.
      const extmem::DurationRange range{std::chrono::nanoseconds(0), std::chrono::hours(24 * 366)};
      auto d = extmem::parse_duration(text, range);
      if (d) {
        if (*d < range.min || *d > range.max) __builtin_trap();
        auto back = extmem::parse_duration(extmem::format_duration(*d), range);
        if (!back || *back != *d) __builtin_trap();
      } else if (d.error().detail.empty()) {
        __builtin_trap();
      }
      break;
    }
    case 8: {
      auto p = extmem::watch::parse_percent(text);
      if (p && !(*p > 0 && *p <= 1.0)) __builtin_trap();
      auto f = extmem::watch::parse_series_format(text);
      if (!f && f.error().detail.empty()) __builtin_trap();
      break;
    }
  }
  return 0;
}
