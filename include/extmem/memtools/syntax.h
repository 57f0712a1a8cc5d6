// User input for the live-memory tools: numbers, addresses and word values, and
// the syntax error that points at the offending character.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/core/error.h"

namespace extmem::memtools {

/// A malformed piece of user input: where it went wrong and what is accepted
/// there. Every memtools parser can fill one of these (through its optional
/// `SyntaxError*` parameter) so that a command can show the input with a caret
/// under the bad character.
struct SyntaxError {
  std::string subject;   ///< what was being parsed: "SPEC", "ram-map", "address", "value", "condition", ...
  std::string input;     ///< the whole text as given
  std::size_t column = 0;  ///< 0-based byte index of the offending character; input.size() when the text ended early
  std::string problem;   ///< what is wrong there, e.g. "unknown key \"sise\""
  std::string accepted;  ///< what would be accepted there, one line

  /// Four lines for a terminal: "bad <option> <subject>: <problem>", the input
  /// (control bytes shown as '?', long input cut to a window around the
  /// column), a caret under the offending character, and "accepted: ...".
  /// `option` names where the text came from ("--match"); may be empty.
  std::string render(std::string_view option = {}) const;

  /// The same as an Error: kind invalid_argument, step "parse <subject>",
  /// no code, detail "<problem> at column <1-based> of \"<input>\"; accepted: <accepted>".
  Error to_error() const;
};

/// How a number is written.
enum class NumberStyle {
  address,   ///< hexadecimal, with or without "0x" (as /proc/PID/maps and QEMU print addresses); "0n" prefix: decimal; no unit
  quantity,  ///< decimal or 0x-hexadecimal, optionally followed by K, M or G (x1024, x1024^2, x1024^3; "KiB" etc. too)
  value,     ///< decimal or 0x-hexadecimal, no unit
};

/// One line saying what `style` accepts, for error messages.
std::string_view describe(NumberStyle style);

/// Parses all of `text` as an unsigned 64-bit number written in `style`.
/// Errors: invalid_argument (step "parse <subject>"); `syntax`, when not null,
/// receives the column of the first bad character (an overflow points at the
/// digit where the value stopped fitting).
Result<std::uint64_t> parse_number(std::string_view text, NumberStyle style, std::string_view subject = "number",
                                   SyntaxError* syntax = nullptr);

/// True for the word widths the tools access: 1, 2, 4 and 8 bytes.
constexpr bool valid_width(unsigned width) noexcept { return width == 1 || width == 2 || width == 4 || width == 8; }

/// Largest value a word of `width` bytes holds (width must be valid).
constexpr std::uint64_t max_word_value(unsigned width) noexcept {
  return width >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
}

/// Parses a word width: "1", "2", "4" or "8" (bytes). Errors: invalid_argument,
/// step "parse width"; `syntax` as for parse_number.
Result<unsigned> parse_width(std::string_view text, SyntaxError* syntax = nullptr);

/// Parses a word value (NumberStyle::value) that must fit in `width` bytes.
/// Errors as parse_number; a value too large for the width points at its first digit.
Result<std::uint64_t> parse_word_value(std::string_view text, unsigned width, std::string_view subject = "value",
                                       SyntaxError* syntax = nullptr);

/// "16K", "4M", "3G" when `bytes` is an exact multiple of that unit, else the
/// decimal byte count; the result parses back with NumberStyle::quantity.
std::string format_size(std::uint64_t bytes);

}  // namespace extmem::memtools
