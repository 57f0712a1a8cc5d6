// Percentages as `extmem watch` accepts them on its command line (--budget,
// --warmup=N%). Durations use the project's one grammar, extmem/core/duration.h.
#pragma once

#include "extmem/core/error.h"

#include <string_view>

namespace extmem::watch {

/// Parses a percentage "1.5" or "1.5%" into a fraction (0.015). Must be > 0
/// and <= 100. Errors (invalid_argument, step "percentage").
Result<double> parse_percent(std::string_view text);

}  // namespace extmem::watch
