// An Error as JSON, with its kind and native code kept for code to branch on:
// what crosses between extmem's processes and what its documents carry.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"

namespace extmem::probe {

/// {"step", "kind", "code", "detail", "space", "native"}: kind and space by their
/// names (to_string), native the code's number (docs/probe-result.schema.json, $defs.error).
nlohmann::json error_json(const Error& e);

/// The Error error_json() wrote; nullopt when `j` is not exactly such an object
/// (a key missing or extra, a value of another type, a kind or space this build
/// does not name). Strings are taken as they are; their bounds are the caller's.
std::optional<Error> error_from_json(const nlohmann::json& j);

}  // namespace extmem::probe
