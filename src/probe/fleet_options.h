// The fleet options' parsing and checks (docs/fleet.md), beside options.cpp's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

/// parse_option()'s part for --require, --require-group (comma-separated names,
/// appended), --expect, --prometheus and --ctrf (paths, not empty). nullopt when
/// `name` is none of them. Errors: invalid_argument, step = `name`.
std::optional<Status> parse_fleet_option(ProbeOptions& o, std::string_view name, const std::string& text);

/// validate()'s part: every --require name a row or a run of one, every
/// --require-group a group, the --expect file readable and well formed
/// (read_baseline()), the --prometheus and --ctrf files creatable. Errors:
/// invalid_argument, step = the option, detail = what was wrong and what is accepted.
Status validate_fleet(const ProbeOptions& o);

}  // namespace extmem::probe
