// Duration options for every subcommand: one grammar (extmem/core/duration.h),
// one refusal text, the option's bounds in its help.
#pragma once

#include <chrono>
#include <string>

#include <CLI/CLI.hpp>

#include "extmem/core/duration.h"

namespace extmem::cli {

/// A CLI11 check accepting what parse_duration(text, range) accepts; its
/// refusal is parse_duration's detail (CLI11 prefixes the option name, the
/// command exits 2 as for every misuse).
CLI::Validator duration_check(DurationRange range);

/// Adds `name` to `cmd`: a duration in `range`, stored into `out` (which must
/// outlive the parse) as nanoseconds. `help` is followed by the accepted form
/// and the bounds. Returns the option, for ->count() and the like.
CLI::Option* add_duration_option(CLI::App& cmd, const std::string& name, std::chrono::nanoseconds& out,
                                 const std::string& help, DurationRange range);

}  // namespace extmem::cli
