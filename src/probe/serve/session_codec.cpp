#include "probe/serve/session_codec.h"

#include <sys/random.h>

#include <array>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace extmem::probe {
namespace {

using nlohmann::json;

constexpr std::array kRefusalNames = {"not_allowed", "busy", "protocol_version", "malformed",
                                      "too_large",   "idle", "wrong_role",       "server_error"};
constexpr std::array kRefusals = {Refusal::not_allowed, Refusal::busy, Refusal::protocol_version, Refusal::malformed,
                                  Refusal::too_large,   Refusal::idle, Refusal::wrong_role,       Refusal::server_error};

}  // namespace

json side_context_json(const SideContext& c) {
  json ns = json::object();
  for (const auto& [kind, id] : c.namespaces) ns[kind] = id;
  return {{"uid", c.uid},       {"gid", c.gid},       {"pid", c.pid},
          {"namespaces", ns},   {"cgroup", c.cgroup}, {"security_label", c.security_label},
          {"dev_shm", c.dev_shm}, {"hostname", c.hostname}};
}

json boundary_json(const std::vector<BoundaryFact>& facts) {
  json out = json::array();
  for (const BoundaryFact& f : facts) out.push_back({{"fact", f.fact}, {"text", f.text}});
  return out;
}

namespace {

SideContext context_from(const json& j) {
  SideContext c;
  j.at("uid").get_to(c.uid);
  j.at("gid").get_to(c.gid);
  j.at("pid").get_to(c.pid);
  for (const auto& [kind, id] : j.at("namespaces").items()) c.namespaces.emplace_back(kind, id.get<std::string>());
  j.at("cgroup").get_to(c.cgroup);
  j.at("security_label").get_to(c.security_label);
  j.at("dev_shm").get_to(c.dev_shm);
  j.at("hostname").get_to(c.hostname);
  return c;
}

// `text` is `digits` lowercase hex digits, or throws naming `what`.
void check_hex(const std::string& text, std::size_t digits, const char* what) {
  if (text.size() != digits || text.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw std::invalid_argument(fmt::format("{} is {} lowercase hex digits", what, digits));
}

// `bytes` random bytes from the kernel, as lowercase hex.
std::string random_hex(std::size_t bytes) {
  std::array<unsigned char, 16> b{};
  if (::getrandom(b.data(), bytes, 0) != static_cast<ssize_t>(bytes))
    b.fill(0);  // never seen; the id then only fails to be unique
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", b[i]);
  return out;
}

Role role_from(const json& j) {
  const std::string r = j.get<std::string>();
  if (r == "server") return Role::server;
  if (r == "client") return Role::client;
  throw std::invalid_argument("a role is \"server\" or \"client\"");
}

// Parses `payload` and reads it with `read`; accepted only when `encode` of the value
// gives the same JSON back (no member unknown or missing, numbers within their types).
template <class T, class Read, class Encode>
Result<T> strict(std::string_view payload, const char* step, Read read, Encode encode) {
  auto refuse = [&](std::string detail) { return Error{step, ErrorKind::protocol, {}, std::move(detail)}; };
  if (payload.size() > kMaxSessionMessage)
    return refuse(fmt::format("{} bytes is not accepted: at most {}", payload.size(), kMaxSessionMessage));
  const json j = json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return refuse("not accepted: one JSON object");
  T value;
  try {
    value = read(j);
    if (json::parse(encode(value)) != j)
      return refuse("not accepted: an unknown member, or a value outside its field's type or range");
  } catch (const std::exception& e) {
    return refuse(fmt::format("not accepted: {}", e.what()));
  }
  return value;
}

}  // namespace

const char* to_string(Refusal r) noexcept {
  for (std::size_t i = 0; i < kRefusals.size(); ++i)
    if (kRefusals[i] == r) return kRefusalNames[i];
  return "?";
}

std::string encode_hello(const Hello& h) {
  return json{{"protocol", h.protocol}, {"build", h.build}, {"run_id", h.run_id}, {"context", side_context_json(h.context)}}
      .dump();
}

std::string encode_welcome(const Welcome& w) {
  json j{{"protocol", w.protocol}, {"build", w.build}, {"serve_role", to_string(w.serve_role)},
         {"max_size", w.max_size}, {"context", side_context_json(w.context)}};
  if (!w.route_token.empty()) j["route_token"] = w.route_token;
  return j.dump();
}

std::string encode_route_hello(const RouteHello& r) {
  return json{{"route", {{"run_id", r.run_id}, {"token", r.token}}}}.dump();
}

std::string encode_event(const SessionEvent& e) {
  json j = json::object();
  if (e.refused) j["refused"] = {{"reason", to_string(e.refused->reason)}, {"detail", e.refused->detail}};
  if (e.half_ended)
    j["half_ended"] = {{"exited", e.half_ended->exited}, {"code", e.half_ended->code},
                       {"signaled", e.half_ended->signaled}, {"signal", e.half_ended->signal}};
  if (e.abandon) j["abandon"] = true;
  return j.dump();
}

Result<Hello> decode_hello(std::string_view payload) {
  return strict<Hello>(
      payload, "decode hello",
      [](const json& j) {
        Hello h;
        j.at("protocol").get_to(h.protocol);
        j.at("build").get_to(h.build);
        j.at("run_id").get_to(h.run_id);
        check_hex(h.run_id, 16, "run_id");
        h.context = context_from(j.at("context"));
        return h;
      },
      encode_hello);
}

Result<Welcome> decode_welcome(std::string_view payload) {
  return strict<Welcome>(
      payload, "decode welcome",
      [](const json& j) {
        Welcome w;
        j.at("protocol").get_to(w.protocol);
        j.at("build").get_to(w.build);
        w.serve_role = role_from(j.at("serve_role"));
        j.at("max_size").get_to(w.max_size);
        w.context = context_from(j.at("context"));
        if (j.contains("route_token")) {
          j.at("route_token").get_to(w.route_token);
          check_hex(w.route_token, 32, "route_token");
        }
        return w;
      },
      encode_welcome);
}

Result<RouteHello> decode_route_hello(std::string_view payload) {
  return strict<RouteHello>(
      payload, "decode route hello",
      [](const json& j) {
        RouteHello r;
        const json& route = j.at("route");
        route.at("run_id").get_to(r.run_id);
        route.at("token").get_to(r.token);
        check_hex(r.run_id, 16, "run_id");
        check_hex(r.token, 32, "token");
        return r;
      },
      encode_route_hello);
}

Result<SessionEvent> decode_event(std::string_view payload) {
  return strict<SessionEvent>(
      payload, "decode session message",
      [](const json& j) {
        SessionEvent e;
        if (j.size() != 1) throw std::invalid_argument("exactly one of refused, half_ended, abandon");
        if (j.contains("refused")) {
          const json& r = j.at("refused");
          const std::string reason = r.at("reason").get<std::string>();
          SessionRefusal refused{Refusal::malformed, r.at("detail").get<std::string>()};
          bool known = false;
          for (std::size_t i = 0; i < kRefusals.size(); ++i)
            if (reason == kRefusalNames[i]) refused.reason = kRefusals[i], known = true;
          if (!known) throw std::invalid_argument("a refusal's reason this build names");
          e.refused = std::move(refused);
        } else if (j.contains("half_ended")) {
          const json& h = j.at("half_ended");
          e.half_ended = os::ExitInfo{h.at("exited").get<bool>(), h.at("code").get<int>(), h.at("signaled").get<bool>(),
                                      h.at("signal").get<int>()};
        } else if (!j.at("abandon").get<bool>()) {
          throw std::invalid_argument("abandon is true");
        } else {
          e.abandon = true;
        }
        return e;
      },
      encode_event);
}

std::string new_run_id() { return random_hex(8); }

std::string new_route_token() { return random_hex(16); }

}  // namespace extmem::probe
