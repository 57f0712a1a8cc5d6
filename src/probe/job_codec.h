// The `job` message: one route half's parameters (probe/half_params.h) as the
// parent sends them to a warm worker (with the peer socket as the frame's fd)
// and to a fresh child (on its report socket, fd 4, before anything else).
// JSON, one object, exactly the fields visit_fields() lists.
#pragma once

#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "probe/half_params.h"

namespace extmem::probe {

/// The largest job payload decode_job() reads, bytes (a real job is about 300).
inline constexpr std::size_t kMaxJobBytes = 4096;

/// `p` as the job payload. `p` must hold what decode_job() accepts.
std::string encode_job(const HalfParams& p);

/// Parses and checks a job payload: a JSON object of at most kMaxJobBytes with
/// every field of visit_fields() and no other, each of its type and within its
/// bounds, and a row of this build's route table (find_route()).
/// Errors: protocol; step "job" for the payload as a whole, "job.FIELD" for a
/// field; detail says what was found and what is accepted.
Result<HalfParams> decode_job(std::string_view payload);

}  // namespace extmem::probe
