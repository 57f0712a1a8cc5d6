// Child mode: one route half in a fresh process (--isolate=route), started by
// the parent's supervise() as `extmem probe --child=ROW --role=ROLE`.
#pragma once

#include <string_view>

namespace extmem::probe {

/// Runs one route half: fd 3 is the peer socket, fd 4 the report socket to the
/// parent, on which the parent's first frame is the half's `job`
/// (probe/job_codec.h), the same one a warm worker gets. `row` and `role` are
/// the command line's labels and must name the job's row and role. Returns the
/// half's exit code; kExitUsage (2) when an fd is not a socket, no job comes
/// within 30 s, the job is malformed or the labels disagree with it (the reason
/// on stderr).
int run_fresh_child(std::string_view row, std::string_view role);

}  // namespace extmem::probe
