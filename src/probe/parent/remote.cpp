#include "probe/parent/remote.h"

#include <fmt/format.h>

#include "extmem/version.h"
#include "probe/phase_a_wire.h"
#include "probe/serve/session_codec.h"

namespace extmem::probe {
namespace {

// The next frame of the handshake, of type `want`; a refusal in its place becomes the session's error.
Result<os::Frame> handshake_frame(const os::Channel& c, os::MsgType want, double timeout_s, const char* waiting_for) {
  auto frame = c.recv(static_cast<int>(timeout_s * 1000));
  if (!frame) {
    Error e = std::move(frame).error();
    e.step = fmt::format("waiting for the serving side's {}: {}", waiting_for, e.step);
    return e;
  }
  if (frame->type == os::MsgType::reply && want != os::MsgType::reply) {
    auto event = decode_event(frame->payload);
    if (event && event->refused)
      return Error{"serving side refused the session", ErrorKind::unsupported, to_string(event->refused->reason),
                   event->refused->detail};
  }
  if (frame->type != want)
    return Error{fmt::format("waiting for the serving side's {}", waiting_for), ErrorKind::protocol, {},
                 fmt::format("message type {} came instead", static_cast<int>(frame->type))};
  return frame;
}

}  // namespace

Result<RemoteSession> open_session(const os::Endpoint& endpoint, const std::string& run_id, double timeout_s) {
  auto channel = os::connect_endpoint(endpoint);
  if (!channel) return std::move(channel).error();
  RemoteSession s;
  s.endpoint = endpoint;
  s.channel = std::move(*channel);
  s.finding.endpoint = endpoint.text();
  s.finding.run_id = run_id;
  s.finding.here = read_side_context();
  const Hello hello{kServeProtocol, kVersion, run_id, s.finding.here};
  if (auto sent = s.channel.send(os::MsgType::request, encode_hello(hello)); !sent) return std::move(sent).error();

  auto reply = handshake_frame(s.channel, os::MsgType::reply, timeout_s, "welcome");
  if (!reply) return std::move(reply).error();
  if (auto event = decode_event(reply->payload); event && event->refused)
    return Error{"serving side refused the session", ErrorKind::unsupported, to_string(event->refused->reason),
                 event->refused->detail};
  auto welcome = decode_welcome(reply->payload);
  if (!welcome) return std::move(welcome).error();
  s.served_role = welcome->serve_role;
  s.max_size = welcome->max_size;
  s.route_token = welcome->route_token;
  if (s.route_token.empty() != s.channel.carries_fds())
    return Error{"decode welcome", ErrorKind::protocol, {},
                 s.channel.carries_fds() ? "a route token came on a session that carries fds"
                                         : "no route token came on a tcp: session, whose routes need one"};
  s.finding.peer_build = welcome->build;
  s.finding.served_role = to_string(welcome->serve_role);
  s.finding.peer = welcome->context;
  s.finding.boundary = compare_sides(s.finding.here, s.finding.peer);

  auto findings = handshake_frame(s.channel, os::MsgType::findings, timeout_s, "phase A");
  if (!findings) return std::move(findings).error();
  auto peer = decode_phase_a(findings->payload);
  if (!peer) return std::move(peer).error();
  if (!*peer)
    return Error{"the serving side's phase A", ErrorKind::unsupported, {}, peer->error().message()};
  s.peer_phase_a = std::move(**peer);
  return s;
}

Result<os::Channel> open_route_connection(const RemoteSession& session) {
  auto channel = os::connect_endpoint(session.endpoint);
  if (!channel) return channel;
  const RouteHello hello{session.finding.run_id, session.route_token};
  if (auto sent = channel->send(os::MsgType::request, encode_route_hello(hello)); !sent) return std::move(sent).error();
  return channel;
}

Status same_device(const PhaseA& here, const PhaseA& peer) {
  const vk::DeviceInfo& a = here.device();
  const vk::DeviceInfo& b = peer.device();
  auto differ = [&](const char* what, const std::string& x, const std::string& y) {
    return Error{"peer device", ErrorKind::unsupported, {},
                 fmt::format("the two sides selected different devices: {} here {} ({}), on the serving side {} ({}); "
                             "give each side --device naming the same one",
                             what, x, a.name, y, b.name)};
  };
  if (a.device_uuid != b.device_uuid) return differ("deviceUUID", a.device_uuid, b.device_uuid);
  if (a.driver_uuid != b.driver_uuid) return differ("driverUUID", a.driver_uuid, b.driver_uuid);
  return {};
}

}  // namespace extmem::probe
