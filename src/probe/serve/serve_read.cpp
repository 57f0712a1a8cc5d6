#include "probe/serve/serve_read.h"

#include <sys/socket.h>

#include <fmt/format.h>

#include "extmem/version.h"
#include "probe/job_codec.h"
#include "probe/routes.h"

namespace extmem::probe {
namespace {

SessionRefusal malformed(std::string detail) { return SessionRefusal{Refusal::malformed, std::move(detail)}; }

}  // namespace

std::variant<Hello, SessionRefusal> read_hello(const os::Frame& frame) {
  if (frame.type != os::MsgType::request)
    return malformed(fmt::format("message type {} is not accepted first: a hello", static_cast<int>(frame.type)));
  auto hello = decode_hello(frame.payload);
  if (!hello) return malformed(hello.error().message());
  if (hello->protocol != kServeProtocol)
    return SessionRefusal{Refusal::protocol_version, fmt::format("protocol {} is not spoken here; accepted: {} (extmem {})",
                                                                 hello->protocol, kServeProtocol, kVersion)};
  return std::move(*hello);
}

std::variant<Incoming, SessionRefusal> read_between_jobs(const os::Frame& frame, Role served, std::uint64_t max_size,
                                                         bool carries_fds) {
  if (frame.type == os::MsgType::request) {
    auto event = decode_event(frame.payload);
    if (!event) return malformed(event.error().message());
    if (!event->abandon) return malformed("only an abandon may come between jobs");
    return Incoming{std::nullopt, true};
  }
  if (frame.type != os::MsgType::job)
    return malformed(fmt::format("message type {} is not accepted here: a job or an abandon", static_cast<int>(frame.type)));
  auto job = decode_job(frame.payload);
  if (!job) return malformed(job.error().message());
  const RouteDef* route = find_route(job->row);  // decode_job accepts only rows of the table
  if (carries_fds) {
    if (!frame.fd.valid()) return malformed("a job frame carries the serving half's end of the route's peer socket as its fd");
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(frame.fd.get(), SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
      return malformed("the job's fd is not a SOCK_SEQPACKET socket: the route's peer socket is one");
  } else if (route->passes_fds) {
    return malformed(fmt::format("row {} hands fds between its halves; this endpoint carries bytes, never fds", job->row));
  }
  if (job->role != served)
    return SessionRefusal{Refusal::wrong_role, fmt::format("this server runs the {} halves (--serve-role); the job is for a {} half",
                                                           to_string(served), to_string(job->role))};
  if (static_cast<std::uint64_t>(job->layout.size) > max_size)
    return SessionRefusal{Refusal::too_large, fmt::format("{} bytes is above this server's --max-size={} bytes; accepted: "
                                                          "a size up to that", job->layout.size, max_size)};
  if ((served == Role::server ? route->server.main : route->client.main) == nullptr)
    return malformed(fmt::format("row {} has no {} half", job->row, to_string(served)));
  return Incoming{std::move(*job), false};
}

std::optional<SessionRefusal> read_route_hello(const os::Frame& frame, const std::string& run_id,
                                               const std::string& token) {
  if (frame.type != os::MsgType::request)
    return malformed(fmt::format("message type {} is not accepted first on a route connection: a route hello",
                                 static_cast<int>(frame.type)));
  auto hello = decode_route_hello(frame.payload);
  if (!hello) return malformed(hello.error().message());
  if (hello->run_id != run_id || hello->token != token)
    return SessionRefusal{Refusal::not_allowed, "the route hello names another session (run id or route token)"};
  return std::nullopt;
}

std::optional<SessionRefusal> read_mid_route(const os::Frame& frame) {
  if (frame.type == os::MsgType::request)
    if (auto event = decode_event(frame.payload); event && event->abandon) return std::nullopt;
  return malformed("only an abandon may come while a half runs");
}

}  // namespace extmem::probe
