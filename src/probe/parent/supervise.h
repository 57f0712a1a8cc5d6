// Runs one route's two halves and turns what happens into a RowResult: in fresh
// child processes (--isolate=route), or on a lane of warm workers
// (parent/worker_pool.h). Both modes share the event loop and the conclusion,
// so a crash, hang or malformed message reads the same in either.
#pragma once

#include <string>

#include "extmem/os/ipc.h"
#include "probe/half_params.h"
#include "probe/parent/row_result.h"
#include "probe/routes.h"

namespace extmem::probe {

class Lane;
struct RemoteSession;

struct SuperviseParams {
  std::string exe;              ///< binary to re-execute
  double timeout_s = std::chrono::duration<double>(kDefaultTimeout).count();  ///< for the whole route, seconds; the halves' soak_s is added to it
  /// What both halves run with; supervise() fills in row and role per half and
  /// sends it as each half's job (probe/job_codec.h), to a fresh child or a worker alike.
  HalfParams half;
};

/// Starts the server half and the client half as fresh processes (fd 3: the
/// socket between them; fd 4: each one's report socket to us), collects step and
/// report messages until both close their report sockets or the time runs out,
/// and reaps both. Timeouts, signals, non-zero exits without a report and
/// malformed messages become FAIL with the half and its last step.
/// Errors: only when a child cannot be started at all (os_error("posix_spawn")).
Result<RowResult> supervise(const RouteDef& route, const SuperviseParams& params);

/// The same on `lane`'s warm workers: each half gets a `job` with its end of a
/// fresh peer socket; a half ends with its worker's `done` frame. A worker that
/// dies, hangs or breaks the protocol is killed and removed from the lane (the
/// next route starts a new one); a worker whose half ended normally stays.
/// RowResult::worker_hygiene holds what each half left in its worker.
/// Errors: a worker cannot be started (os_error("posix_spawn"), os_error("socketpair")).
Result<RowResult> supervise_on_lane(const RouteDef& route, const SuperviseParams& params, Lane& lane);

/// --peer: the half the serving side runs (RemoteSession::served_role) goes to it
/// as a job over the session, with its end of a fresh peer socket; the other half
/// runs on `lane`'s slot A. The serving side relays its worker's frames, so both
/// halves are read as on a lane; a half the serving side says ended without a
/// done frame reads as a worker that died. When the route times out or fails
/// with the serving half still running, it is abandoned (the serving side kills
/// it); a session that closes or does not answer is marked broken, and every
/// later row FAILs naming why. A row's detail names the boundary facts that differ.
/// Errors: a local worker cannot be started (os_error("posix_spawn"), os_error("socketpair")).
Result<RowResult> supervise_across(const RouteDef& route, const SuperviseParams& params, Lane& lane,
                                   RemoteSession& remote);

}  // namespace extmem::probe
