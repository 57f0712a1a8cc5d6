// The driving side's session with `extmem probe serve` (--peer; docs/serve.md):
// the connection, the handshake, and what the serving side said about itself.
// supervise_across() (supervise.h) runs each route's serving half through it.
#pragma once

#include <string>

#include "extmem/os/endpoint.h"
#include "extmem/os/ipc.h"
#include "extmem/probe/boundary.h"
#include "extmem/probe/findings.h"
#include "probe/half_params.h"

namespace extmem::probe {

struct RemoteSession {
  os::Endpoint endpoint;  ///< where the session was opened; tcp: where each route connection goes
  os::Channel channel;
  PeerFinding finding;
  Role served_role = Role::server;  ///< the halves the serving side runs
  std::uint64_t max_size = 0;       ///< the serving side's --max-size, bytes
  PhaseA peer_phase_a;              ///< the serving side's phase A
  std::string route_token;          ///< tcp: the welcome's, which each route connection presents
  /// Set once the session can carry no more routes (closed, or a half that did
  /// not end when abandoned): why, for the rows that follow.
  std::string broken;
  bool answered = true;  ///< the serving side's worker is warm: no start-up allowance
};

/// Connects to `endpoint`, says hello (this side's context and `run_id`) and reads the welcome and the serving side's phase A,
/// waiting at most `timeout_s` for each. Errors: connect's (os, errno verbatim);
/// step "serving side refused the session" (kind unsupported; detail the reason
/// and the server's words); the decoders' (protocol); timeout; peer_closed.
Result<RemoteSession> open_session(const os::Endpoint& endpoint, const std::string& run_id, double timeout_s);

/// tcp: endpoints: the route's peer socket, a second connection to the serving
/// side that presents this session's run id and route token; the serving side
/// hands it to the half of the job just sent. Errors: connect's (os, errno
/// verbatim); os_error("sendmsg") when the route hello cannot be sent.
Result<os::Channel> open_route_connection(const RemoteSession& session);

/// Whether both sides selected the same device: the Vulkan deviceUUID and
/// driverUUID, and where both have CUDA, the CUDA device of that UUID. Error
/// (unsupported, step "peer device"): which differs, both sides' values named.
Status same_device(const PhaseA& here, const PhaseA& peer);

}  // namespace extmem::probe
