// The text grammar of `extmem probe`'s valued options: what the command line and
// an args file give as words, read into the library's typed record
// (probe::ProbeOptions). Ranges and combinations are the library's
// probe::validate(); both refuse in the words of probe::kOptionWords.
#pragma once

#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/probe/probe.h"

namespace extmem::cli {

/// Sets the option `name` ("--size", "--timeout", "--soak", "--measure-size",
/// "--measure-repeats", "--jobs", "--isolate", "--image-size", "--memory-type",
/// "--json", "--junit", "--output", "--verdict-file", "--device", "--gl-driver",
/// "--fd-transport", "--expect-transport", "--peer", and the fleet options
/// "--require", "--require-group" (comma-separated names, appended), "--expect",
/// "--prometheus", "--ctrf") of `options` from its text: numbers must be plain
/// decimal (a sign or a suffix is refused), --timeout and --soak are durations
/// (extmem/core/duration.h, within probe::kTimeoutRange / kSoakRange, refused in
/// parse_duration's words), word options one of their words (probe::to_string()),
/// --peer an endpoint (os::parse_endpoint()), paths and the device not empty.
/// On error `options` may hold a partly set value; do not run with it. Errors:
/// invalid_argument, step = `name`, detail = the text and what is accepted.
Status parse_probe_option(probe::ProbeOptions& options, std::string_view name, const std::string& text);

}  // namespace extmem::cli
