// Phase A as JSON: the one form of it, which the --json document embeds and a
// warm worker sends to the parent (phase_a_wire.h), so what a worker found and
// what a document says are read by the same code (docs/probe-result.schema.json).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "extmem/probe/findings.h"

namespace extmem::probe {

/// The phase-A members of the --json document, keyed as there: "context",
/// "vulkan", "gl_driver", "gles", "cuda" and "fd_transport". Besides each part's
/// fields it writes facts derived from them (the GL and CUDA UUIDs against the
/// selected Vulkan device's, whether GL_RENDERER shows the GL driver asked for,
/// the fd transport's summary word and texts) and this build's CUDA note. Lists
/// of names (extensions, the GL driver's environment) are objects keyed by name.
nlohmann::json phase_a_json(const PhaseA& a);

/// The phase A phase_a_json() wrote, checked: `members` must be exactly
/// phase_a_json() of the decoded value (no member unknown or missing, every
/// number within its field's type, derived facts and the CUDA note as this build
/// writes them, and so named lists sorted by name, as enumeration leaves them),
/// errors of kinds and code spaces error.h names, GL driver names gl_driver.h
/// accepts, and a selected device the enumeration holds. Errors: protocol, step
/// `what` or "`what` /JSON/POINTER" naming the first member refused, detail what
/// is accepted.
Result<PhaseA> phase_a_from_json(const nlohmann::json& members, std::string_view what);

}  // namespace extmem::probe
