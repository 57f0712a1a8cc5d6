#include "probe/worker/peer_codec.h"

#include <fmt/format.h>

#include "probe/json_kind.h"
#include "probe/wire_fields.h"

namespace extmem::probe::peer {
namespace {

using nlohmann::json;

using wire::Fields;
using wire::finished;
using wire::nullable;
using wire::refusal;

// A region index: A..F.
Region region_of(Fields& f) { return static_cast<Region>(f.whole("region", static_cast<std::uint64_t>(Region::F))); }

Result<json> parse_object(std::string_view payload, std::string_view what) {
  return wire::parse_object(payload, what, kMaxMessageBytes);
}

constexpr std::string_view kRequest = "peer request";
constexpr std::string_view kReply = "peer reply";
constexpr std::string_view kSetup = "peer setup";

// A refusal in place of a reply: {"error": REASON} and nothing else.
std::optional<Error> as_refusal(const json& j) {
  auto it = j.find("error");
  if (it == j.end()) return std::nullopt;
  if (!it->is_string() || j.size() != 1)
    return refusal(kReply, "error", "a refusal is accepted only as {\"error\": REASON}");
  return Error{"peer message", ErrorKind::protocol, {}, "peer: " + it->get<std::string>()};
}

}  // namespace

// ------------------------------------------------------------------ setup --

std::string encode(const Setup& s) {
  if (const auto* ok = std::get_if<SetupOk>(&s)) return json{{"ok", true}, {"info", to_json(ok->info)}}.dump();
  const RouteFacts& f = std::get<SetupFailed>(s).facts;
  return json{{"ok", false},
              {"unsupported", nullable(f.unsupported)},
              {"fatal", nullable(f.fatal)},
              {"skip", nullable(f.skip)},
              {"stop_kind", f.stop_kind ? json(to_string(*f.stop_kind)) : json(nullptr)}}
      .dump();
}

Result<Setup> decode_setup(std::string_view payload) {
  auto j = parse_object(payload, kSetup);
  if (!j) return std::move(j).error();
  Fields f(*j, kSetup);
  if (f.boolean("ok")) {
    SetupOk ok;
    if (const json* info = f.get("info", true)) {
      auto decoded = decode_setup_info(*info);
      if (!decoded) f.adopt(std::move(decoded).error());
      else ok.info = std::move(*decoded);
    }
    return finished<Setup>(f, std::move(ok));
  }
  SetupFailed failed;
  failed.facts.unsupported = f.optional_text("unsupported");
  failed.facts.fatal = f.optional_text("fatal");
  failed.facts.skip = f.optional_text("skip");
  if (auto kind = f.optional_text("stop_kind")) {
    failed.facts.stop_kind = error_kind_from_string(*kind);
    if (!failed.facts.stop_kind) f.refuse("stop_kind", "not an error kind of extmem/core/error.h");
  }
  if (!failed.facts.unsupported && !failed.facts.fatal && !failed.facts.skip) {
    failed.facts.fatal = "peer setup failed without a reason";
    failed.facts.stop_kind = ErrorKind::protocol;
  }
  return finished<Setup>(f, std::move(failed));
}

// --------------------------------------------------------------- requests --

std::string op_of(const Request& r) {
  return std::visit(
      [](const auto& q) -> std::string {
        using T = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<T, Check>) return "check";
        else if constexpr (std::is_same_v<T, Write>) return "write";
        else if constexpr (std::is_same_v<T, Count>) return "count";
        else if constexpr (std::is_same_v<T, Read>) return "read";
        else if constexpr (std::is_same_v<T, Stamp>) return "stamp";
        else if constexpr (std::is_same_v<T, Unstamp>) return "unstamp";
        else if constexpr (std::is_same_v<T, Missing>) return "missing";
        else if constexpr (std::is_same_v<T, Fill>) return "fill";
        else if constexpr (std::is_same_v<T, Done>) return "done";
        else return q.op;
      },
      r);
}

std::string encode(const Request& r) {
  json j = std::visit(
      [](const auto& q) -> json {
        using T = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<T, Check> || std::is_same_v<T, Write>) {
          json o = {{"region", static_cast<int>(q.region)}};
          if (q.seed) o["seed"] = *q.seed;
          return o;
        } else if constexpr (std::is_same_v<T, Count>) {
          return {{"region", static_cast<int>(q.region)}, {"seed", q.seed}};
        } else if constexpr (std::is_same_v<T, Read>) {
          return {{"offset", q.offset}, {"length", q.length}};
        } else if constexpr (std::is_same_v<T, Stamp> || std::is_same_v<T, Missing>) {
          return {{"size", q.size}, {"seed", q.seed}};
        } else if constexpr (std::is_same_v<T, Fill>) {
          return {{"offset", q.offset}, {"length", q.length}, {"seed", q.seed}};
        } else if constexpr (std::is_same_v<T, RouteOp>) {
          return q.body.is_object() ? q.body : json::object();
        } else {
          return json::object();
        }
      },
      r);
  j["op"] = op_of(r);
  return j.dump();
}

Result<Request> decode_request(std::string_view payload) {
  auto j = parse_object(payload, kRequest);
  if (!j) return std::move(j).error();
  auto op_it = j->find("op");
  if (op_it == j->end() || !op_it->is_string() || !wire::is_word(op_it->get_ref<const std::string&>()))
    return refusal(kRequest, "op", "missing or not a word: a string of 1 to 32 printable characters is accepted");
  const std::string op = op_it->get<std::string>();
  Fields f(*j, kRequest);
  f.get("op", true);
  if (op == "check") return finished<Request>(f, Check{region_of(f), f.absent_or_whole("seed")});
  if (op == "write") return finished<Request>(f, Write{region_of(f), f.absent_or_whole("seed")});
  if (op == "count") {
    const Region region = region_of(f);
    return finished<Request>(f, Count{region, f.whole("seed")});
  }
  if (op == "read") {
    const std::uint64_t offset = f.whole("offset");
    return finished<Request>(f, Read{offset, f.whole("length")});
  }
  if (op == "stamp" || op == "missing") {
    const std::uint64_t size = f.whole("size");
    const std::uint64_t seed = f.whole("seed");
    if (op == "stamp") return finished<Request>(f, Stamp{size, seed});
    return finished<Request>(f, Missing{size, seed});
  }
  if (op == "fill") {
    const std::uint64_t offset = f.whole("offset");
    const std::uint64_t length = f.whole("length");
    return finished<Request>(f, Fill{offset, length, f.whole("seed")});
  }
  if (op == "unstamp") return finished<Request>(f, Unstamp{});
  if (op == "done") return finished<Request>(f, Done{});
  return Request{RouteOp{op, std::move(*j)}};
}

// ---------------------------------------------------------------- replies --

std::string encode(const Ack&) { return "{}"; }
std::string encode(const CheckReply& r) {
  return json{{"match", r.match}, {"mismatch_at", nullable(r.mismatch_at)}, {"payload_at", nullable(r.payload_at)}}.dump();
}
std::string encode(const CountReply& r) { return json{{"stale", r.stale}}.dump(); }
std::string encode(const MissingReply& r) { return json{{"missing_at", nullable(r.missing_at)}}.dump(); }
std::string encode(const ErrorReply& r) { return json{{"error", r.error}}.dump(); }

template <class T>
Result<T> decode_reply(std::string_view payload) {
  auto j = parse_object(payload, kReply);
  if (!j) return std::move(j).error();
  if (auto e = as_refusal(*j)) return std::move(*e);
  Fields f(*j, kReply);
  T r;
  if constexpr (std::is_same_v<T, CheckReply>) {
    r.match = f.boolean("match");
    r.mismatch_at = f.null_or_whole("mismatch_at");
    r.payload_at = f.null_or_whole("payload_at");
  } else if constexpr (std::is_same_v<T, CountReply>) {
    r.stale = f.whole("stale");
  } else if constexpr (std::is_same_v<T, MissingReply>) {
    r.missing_at = f.null_or_whole("missing_at");
  }
  return finished<T>(f, std::move(r));
}

template Result<Ack> decode_reply<Ack>(std::string_view);
template Result<CheckReply> decode_reply<CheckReply>(std::string_view);
template Result<CountReply> decode_reply<CountReply>(std::string_view);
template Result<MissingReply> decode_reply<MissingReply>(std::string_view);

Result<json> decode_route_reply(std::string_view payload) {
  auto j = parse_object(payload, kReply);
  if (!j) return std::move(j).error();
  if (auto e = as_refusal(*j)) return std::move(*e);
  return j;
}

}  // namespace extmem::probe::peer
