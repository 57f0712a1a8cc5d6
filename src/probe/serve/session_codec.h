// The session between `extmem probe --peer` (the driving side) and `extmem probe
// serve` (docs/serve.md, "Protocol"): JSON payloads of os/ipc.h frames on the
// endpoint's socket. The driving side sends a hello (`request`); the serving side
// answers a welcome (`reply`) and its phase A (`findings`, phase_a_wire.h), or a
// refusal and closes. Then, one route at a time, the driving side sends a `job`
// (job_codec.h) whose fd is the serving half's end of the route's peer socket;
// the serving side relays its worker's `step`, `report` and `done` frames, or
// tells with a `reply` that its half ended without one (half_ended) or that it
// refuses the job. An `abandon` (`request`) asks it to kill a half still running.
// On a tcp: endpoint no fd crosses: the welcome carries a route token, a job
// comes without an fd, and for a row with two halves the driving side then opens
// a second connection, the route's peer socket, whose first frame is a route
// hello (`request`: the run id and that token).
// Every decoder is strict: exactly the members its encoder writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "extmem/os/child.h"
#include "extmem/probe/boundary.h"
#include "probe/half_params.h"

namespace extmem::probe {

/// The session protocol's version: both sides must speak the same one.
inline constexpr int kServeProtocol = 1;
/// The most bytes a session message (not a job, not phase A) may have.
inline constexpr std::size_t kMaxSessionMessage = 16 * 1024;

struct Hello {
  int protocol = kServeProtocol;
  std::string build;      ///< the driving side's extmem version
  std::string run_id;     ///< 16 lowercase hex digits, chosen by the driving side
  SideContext context;
  bool operator==(const Hello&) const = default;
};

struct Welcome {
  int protocol = kServeProtocol;
  std::string build;
  Role serve_role = Role::server;  ///< the halves this server runs (--serve-role)
  std::uint64_t max_size = 0;      ///< --max-size: the largest allocation a job may ask for, bytes
  SideContext context;
  /// tcp: endpoints only (empty, and not written, otherwise): 32 lowercase hex
  /// digits the route connections of this session present.
  std::string route_token;
  bool operator==(const Welcome&) const = default;
};

/// The first frame of a route connection (tcp: endpoints): whose session it belongs to.
struct RouteHello {
  std::string run_id;  ///< the session's run id
  std::string token;   ///< the welcome's route_token
  bool operator==(const RouteHello&) const = default;
};

/// Why the serving side refused a session or a job.
enum class Refusal {
  not_allowed,       ///< the peer's uid is not in --allow-uid
  busy,              ///< another driving peer's session is running
  protocol_version,  ///< the hello's protocol is not this server's
  malformed,         ///< a frame or payload that does not decode
  too_large,         ///< the job's size is above --max-size
  wrong_role,        ///< the job is for the half this server does not run
  idle,              ///< nothing came within the idle timeout
  server_error,      ///< the serving side could not run the half (its worker could not start)
};
const char* to_string(Refusal r) noexcept;

struct SessionRefusal {
  Refusal reason = Refusal::malformed;
  std::string detail;  ///< what was wrong and what is accepted
  bool operator==(const SessionRefusal&) const = default;
};

/// One message of the session that is not a job or a relayed frame.
struct SessionEvent {
  std::optional<SessionRefusal> refused;
  std::optional<os::ExitInfo> half_ended;  ///< the serving half's worker ended without its done frame
  bool abandon = false;                    ///< driving -> serving: kill the half still running
};

std::string encode_hello(const Hello& h);
std::string encode_welcome(const Welcome& w);
std::string encode_event(const SessionEvent& e);
std::string encode_route_hello(const RouteHello& r);

/// Each decoder: at most kMaxSessionMessage bytes of one JSON object with exactly
/// the members its encoder writes, of their types. Errors: protocol, step
/// "decode hello" / "decode welcome" / "decode session message" / "decode route hello", detail what is
/// accepted. decode_hello does not check the protocol number (the server refuses
/// a wrong one in its own words).
Result<Hello> decode_hello(std::string_view payload);
Result<Welcome> decode_welcome(std::string_view payload);
Result<SessionEvent> decode_event(std::string_view payload);
Result<RouteHello> decode_route_hello(std::string_view payload);

/// A side's context as the hello, the welcome and both sides' documents write it:
/// {uid, gid, pid, namespaces: {KIND: ID}, cgroup, security_label, dev_shm, hostname}.
nlohmann::json side_context_json(const SideContext& c);
/// The facts as documents write them: [{"fact", "text"}].
nlohmann::json boundary_json(const std::vector<BoundaryFact>& facts);

/// 16 lowercase hex digits from the kernel's random source.
std::string new_run_id();
/// 32 lowercase hex digits from the kernel's random source (a welcome's route_token).
std::string new_route_token();

}  // namespace extmem::probe
