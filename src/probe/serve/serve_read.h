// How the serving side reads each frame a driving peer sends (docs/serve.md,
// "Protocol"): every check it makes before acting on one, as pure functions, so
// the fuzz target (fuzz/serve_read_fuzz.cpp) runs exactly what the server runs.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "extmem/os/ipc.h"
#include "probe/half_params.h"
#include "probe/serve/session_codec.h"

namespace extmem::probe {

/// The first frame of a session: a `request` holding a hello of this protocol,
/// or why it is refused (malformed: another type or a hello that does not
/// decode; protocol_version: another protocol, the accepted one named).
std::variant<Hello, SessionRefusal> read_hello(const os::Frame& frame);

/// A frame between jobs: a job to run, or an abandon (its half has ended already).
struct Incoming {
  std::optional<HalfParams> job;  ///< a job, checked
  bool abandon = false;
};

/// A frame between jobs, or why it is refused: malformed (another type, a job that
/// does not decode, a row without the served half, a request that is not an
/// abandon; where the session `carries_fds`, a job frame without its fd or whose
/// fd is not a SOCK_SEQPACKET socket; where it does not (tcp:), a row whose halves
/// hand each other fds), wrong_role (the job is for the other half), too_large
/// (the job's size is above `max_size` bytes).
std::variant<Incoming, SessionRefusal> read_between_jobs(const os::Frame& frame, Role served, std::uint64_t max_size,
                                                         bool carries_fds = true);

/// The first frame of a route connection (tcp: endpoints): nothing when it is a
/// route hello of session `run_id` with `token`, else why it is refused
/// (malformed: another type, or a route hello that does not decode; not_allowed:
/// another session's id or token).
std::optional<SessionRefusal> read_route_hello(const os::Frame& frame, const std::string& run_id,
                                               const std::string& token);

/// A frame while a half runs: nothing (an abandon), or why it is refused
/// (malformed: anything but an abandon).
std::optional<SessionRefusal> read_mid_route(const os::Frame& frame);

}  // namespace extmem::probe
