// The fleet options' checks (docs/fleet.md), beside options.cpp's validate(); their
// text grammar is the command's (src/cli/probe_option_text.cpp).
#pragma once

#include "extmem/core/error.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

/// validate()'s part: every --require name a row or a run of one, every
/// --require-group a group, the --expect file readable and well formed
/// (read_baseline()), the --prometheus and --ctrf files creatable. Errors:
/// invalid_argument, step = the option, detail = what was wrong and what is accepted.
Status validate_fleet(const ProbeOptions& o);

}  // namespace extmem::probe
