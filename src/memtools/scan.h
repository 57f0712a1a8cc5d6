// Private helpers of the memtools parsers: numbers inside a larger input, so a
// syntax error can point at its column in the whole text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "extmem/memtools/syntax.h"

namespace extmem::memtools::detail {

/// Where a scan failed: the column in the whole input and what is wrong there.
struct ScanFailure {
  std::size_t column = 0;
  std::string problem;
};

/// Parses input[begin, end) as a number in `style`. On failure returns
/// nullopt and fills `failure` with a column inside [begin, end].
std::optional<std::uint64_t> scan_number(std::string_view input, std::size_t begin, std::size_t end,
                                         NumberStyle style, ScanFailure& failure);

/// The character at `input[column]` quoted for a message: 'x', or \xNN for
/// bytes that are not printable ASCII; "end of input" past the end.
std::string quote_char(std::string_view input, std::size_t column);

/// Fills `*syntax` (when not null) and returns the matching Error.
Error syntax_failure(SyntaxError* syntax, std::string_view subject, std::string_view input, std::size_t column,
                     std::string problem, std::string_view accepted);

}  // namespace extmem::memtools::detail
