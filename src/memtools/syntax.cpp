#include "extmem/memtools/syntax.h"

#include <algorithm>

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

constexpr std::size_t kWindow = 60;  // characters shown on each side of the caret in long input

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
unsigned hex_value(char c) {
  if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
  return static_cast<unsigned>(c - 'A' + 10);
}
bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Accumulates digits in `base` from input[pos, end); stops at the first non-digit.
// Returns false on overflow (failure points at the digit that overflowed).
bool digits(std::string_view input, std::size_t& pos, std::size_t end, unsigned base, std::uint64_t& value,
            detail::ScanFailure& failure) {
  value = 0;
  for (; pos < end; ++pos) {
    const char c = input[pos];
    const bool ok = base == 16 ? is_hex(c) : (c >= '0' && c <= '9');
    if (!ok) break;
    const unsigned d = hex_value(c);
    if (value > (~std::uint64_t{0} - d) / base) {
      failure = {pos, "the number does not fit in 64 bits"};
      return false;
    }
    value = value * base + d;
  }
  return true;
}

}  // namespace

namespace detail {

std::string quote_char(std::string_view input, std::size_t column) {
  if (column >= input.size()) return "end of input";
  const auto c = static_cast<unsigned char>(input[column]);
  if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("\\x{:02x}", c);
}

std::optional<std::uint64_t> scan_number(std::string_view input, std::size_t begin, std::size_t end,
                                         NumberStyle style, ScanFailure& failure) {
  std::size_t pos = begin;
  unsigned base = style == NumberStyle::address ? 16 : 10;
  if (end - pos >= 2 && input[pos] == '0' && (input[pos + 1] == 'x' || input[pos + 1] == 'X')) {
    base = 16;
    pos += 2;
  } else if (style == NumberStyle::address && end - pos >= 2 && input[pos] == '0' &&
             (input[pos + 1] == 'n' || input[pos + 1] == 'N')) {
    // An address is hexadecimal unless asked for in decimal, and 'n' is no hex digit: "0n4096" cannot be misread.
    base = 10;
    pos += 2;
  }
  const std::size_t first_digit = pos;
  std::uint64_t value = 0;
  if (!digits(input, pos, end, base, value, failure)) return std::nullopt;
  if (pos == first_digit) {
    failure = {pos, fmt::format("expected {} digits, found {}", base == 16 ? "hexadecimal" : "decimal",
                                quote_char(input.substr(0, end), pos))};
    return std::nullopt;
  }
  if (pos < end && style == NumberStyle::quantity) {
    std::uint64_t unit = 0;
    switch (input[pos]) {
      case 'K': case 'k': unit = 1ull << 10; break;
      case 'M': case 'm': unit = 1ull << 20; break;
      case 'G': case 'g': unit = 1ull << 30; break;
      default: break;
    }
    if (unit != 0) {
      const std::size_t unit_pos = pos++;
      if (end - pos >= 2 && input[pos] == 'i' && input[pos + 1] == 'B') pos += 2;
      if (pos == end) {
        if (value > ~std::uint64_t{0} / unit) {
          failure = {unit_pos, "the number times its unit does not fit in 64 bits"};
          return std::nullopt;
        }
        return value * unit;
      }
    }
  }
  if (pos < end) {
    failure = {pos, fmt::format("unexpected {} in a number", quote_char(input, pos))};
    return std::nullopt;
  }
  return value;
}

Error syntax_failure(SyntaxError* syntax, std::string_view subject, std::string_view input, std::size_t column,
                     std::string problem, std::string_view accepted) {
  SyntaxError s{std::string(subject), std::string(input), column, std::move(problem), std::string(accepted)};
  Error e = s.to_error();
  if (syntax != nullptr) *syntax = std::move(s);
  return e;
}

}  // namespace detail

std::string SyntaxError::render(std::string_view option) const {
  // Cut long input to a window around the column, then draw the caret under the
  // character: count one column per character (UTF-8 continuation bytes take none).
  std::size_t from = column > kWindow ? column - kWindow : 0;
  while (from > 0 && from < input.size() && continuation_byte(input[from])) --from;
  std::size_t to = std::min(input.size(), column + kWindow);
  while (to < input.size() && continuation_byte(input[to])) ++to;
  std::string shown = from > 0 ? "..." : "";
  std::size_t caret = shown.size();
  for (std::size_t i = from; i < to; ++i) {
    const auto c = static_cast<unsigned char>(input[i]);
    shown += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
    if (i < column && !continuation_byte(input[i])) ++caret;
  }
  if (to < input.size()) shown += "...";
  // "bad --match SPEC", "bad address", and "bad --ram-map" rather than "bad --ram-map ram-map".
  const bool repeats = option.size() > 2 && option.substr(2) == subject;
  const std::string head = option.empty() ? fmt::format("bad {}", subject)
                           : repeats      ? fmt::format("bad {}", option)
                                          : fmt::format("bad {} {}", option, subject);
  return fmt::format("{}: {}\n  {}\n  {}^\n  accepted: {}\n", head, problem, shown, std::string(caret, ' '),
                     accepted);
}

Error SyntaxError::to_error() const {
  return Error{"parse " + subject, ErrorKind::invalid_argument, {},
               fmt::format("{} at column {} of \"{}\"; accepted: {}", problem, column + 1, input.substr(0, 200),
                           accepted)};
}

std::string_view describe(NumberStyle style) {
  switch (style) {
    case NumberStyle::address:
      return "a hexadecimal address, with or without 0x (e.g. 0x7f1c2a400080); 0n for decimal (0n4096); no K/M/G";
    case NumberStyle::quantity:
      return "a number, decimal or 0x-hexadecimal, optionally followed by K, M or G (x1024; KiB, MiB, GiB too)";
    case NumberStyle::value: return "a number, decimal or 0x-hexadecimal";
  }
  return "a number";
}

Result<std::uint64_t> parse_number(std::string_view text, NumberStyle style, std::string_view subject,
                                   SyntaxError* syntax) {
  detail::ScanFailure failure;
  auto value = detail::scan_number(text, 0, text.size(), style, failure);
  if (!value) return detail::syntax_failure(syntax, subject, text, failure.column, failure.problem, describe(style));
  return *value;
}

Result<unsigned> parse_width(std::string_view text, SyntaxError* syntax) {
  constexpr std::string_view kAccepted = "1, 2, 4 or 8 (bytes)";
  detail::ScanFailure failure;
  auto n = detail::scan_number(text, 0, text.size(), NumberStyle::value, failure);
  if (!n) return detail::syntax_failure(syntax, "width", text, failure.column, failure.problem, kAccepted);
  if (*n > 8 || !valid_width(static_cast<unsigned>(*n)))
    return detail::syntax_failure(syntax, "width", text, 0, fmt::format("{} is not a word width", *n), kAccepted);
  return static_cast<unsigned>(*n);
}

Result<std::uint64_t> parse_word_value(std::string_view text, unsigned width, std::string_view subject,
                                       SyntaxError* syntax) {
  if (!valid_width(width))
    return Error{"parse " + std::string(subject), ErrorKind::invalid_argument, {},
                 fmt::format("word width {} is not 1, 2, 4 or 8 bytes", width)};
  const std::string accepted =
      fmt::format("{} of at most {:#x} (fits in {} byte{})", describe(NumberStyle::value), max_word_value(width),
                  width, width == 1 ? "" : "s");
  detail::ScanFailure failure;
  auto value = detail::scan_number(text, 0, text.size(), NumberStyle::value, failure);
  if (!value) return detail::syntax_failure(syntax, subject, text, failure.column, failure.problem, accepted);
  if (*value > max_word_value(width))
    return detail::syntax_failure(syntax, subject, text, 0,
                                  fmt::format("{:#x} does not fit in a {}-byte word", *value, width), accepted);
  return *value;
}

std::string format_size(std::uint64_t bytes) {
  if (bytes != 0) {
    if (bytes % (1ull << 30) == 0) return fmt::format("{}G", bytes >> 30);
    if (bytes % (1ull << 20) == 0) return fmt::format("{}M", bytes >> 20);
    if (bytes % (1ull << 10) == 0) return fmt::format("{}K", bytes >> 10);
  }
  return fmt::format("{}", bytes);
}

}  // namespace extmem::memtools
