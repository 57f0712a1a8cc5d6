#include "probe/routes/s1/codec.h"

#include <fmt/format.h>

#include "probe/wire_fields.h"

namespace extmem::probe::s1 {
// Named, not anonymous: library files share unity units (route_file.h).
namespace codec_detail {

using nlohmann::json;
using wire::Fields;
using wire::finished;

constexpr std::string_view kRequest = "s1 request";
constexpr std::string_view kReply = "s1 reply";
constexpr const char* kOpsAccepted =
    "hold, release, ping, ping-gpu, drain, wait-export, wait-arm, wait-ungated, wait-observe, wait-wait, wait-check, done";

void put(json& j, const GpuEnd& g) {
  if (g.gpu_t) {
    j["gpu_t"] = *g.gpu_t;
    j["max_deviation_ns"] = g.max_deviation_ns;
  } else if (g.gpu_error) {
    j["gpu_error"] = *g.gpu_error;
  }
}

GpuEnd gpu_end(Fields& f) {
  GpuEnd g;
  g.gpu_t = f.absent_or_number("gpu_t");
  if (g.gpu_t) g.max_deviation_ns = f.whole("max_deviation_ns");
  else g.gpu_error = f.absent_or_text("gpu_error");
  return g;
}

}  // namespace codec_detail
using namespace codec_detail;

Refusal refusal_of(const Error& e) {
  return Refusal{e.detail.empty() ? e.message() : e.detail, e.step, e.code, e.kind == ErrorKind::unsupported};
}

const char* op_of(const Request& r) {
  static constexpr const char* kOps[] = {"hold",      "release",      "ping",      "ping-gpu",  "drain",      "wait-export",
                                         "wait-arm",  "wait-ungated", "wait-observe", "wait-wait", "wait-check", "done"};
  static_assert(std::size(kOps) == std::variant_size_v<Request>);
  return kOps[r.index()];
}

json body(const Request& r) {
  json j = std::visit(
      [](const auto& q) -> json {
        using T = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<T, Hold>) return {{"kind", q.kind}, {"write", q.write}, {"time", q.time}};
        else if constexpr (std::is_same_v<T, WaitExport>) return {{"kind", q.kind}};
        else if constexpr (std::is_same_v<T, WaitUngated> || std::is_same_v<T, WaitWait>) return {{"ms", q.ms}};
        else return json::object();
      },
      r);
  j["op"] = op_of(r);
  return j;
}

std::string encode(const Request& r) { return body(r).dump(); }

Result<Request> decode_request(std::string_view payload) {
  auto j = wire::parse_object(payload, kRequest, kMaxMessageBytes);
  if (!j) return std::move(j).error();
  Fields f(*j, kRequest);
  const std::string op = f.word("op");
  if (!wire::is_word(op)) return std::move(*f.finish());  // the op's refusal, before any other field's
  if (op == "hold") {
    Hold h;
    h.kind = f.word("kind");
    h.write = f.boolean("write");
    h.time = f.boolean("time");
    return finished<Request>(f, std::move(h));
  }
  if (op == "wait-export") return finished<Request>(f, WaitExport{f.word("kind")});
  if (op == "wait-ungated") return finished<Request>(f, WaitUngated{f.whole("ms", kMaxWaitMs)});
  if (op == "wait-wait") return finished<Request>(f, WaitWait{f.whole("ms", kMaxWaitMs)});
  if (op == "release") return finished<Request>(f, Release{});
  if (op == "ping") return finished<Request>(f, Ping{});
  if (op == "ping-gpu") return finished<Request>(f, PingGpu{});
  if (op == "drain") return finished<Request>(f, Drain{});
  if (op == "wait-arm") return finished<Request>(f, WaitArm{});
  if (op == "wait-observe") return finished<Request>(f, WaitObserve{});
  if (op == "wait-check") return finished<Request>(f, WaitCheck{});
  if (op == "done") return finished<Request>(f, Done{});
  return wire::refusal(kRequest, "op", fmt::format("\"{}\" is not an S1 op: {} are accepted", op, kOpsAccepted));
}

json body(const Ok&) {
  return {{"ok", true}};
}
json body(const Released& r) {
  return {{"ok", true}, {"t", r.t}};
}
json body(const Pong& r) {
  return {{"t", r.t}};
}
json body(const PingGpuReply& r) {
  json j = json::object();
  if (r.t) j["t"] = *r.t;
  put(j, r.gpu);
  return j;
}
json body(const Drained& r) {
  json j = {{"drained", r.drained}};
  put(j, r.gpu);
  return j;
}
json body(const WaitReply& r) {
  return {{"signalled", r.signalled}, {"code", r.code}};
}
json body(const ObserveReply& r) {
  json j = {{"fence", r.fence}, {"marker", r.marker}};
  if (r.counter) j["counter"] = *r.counter;
  return j;
}
json body(const CheckReply& r) {
  json j = {{"mismatched", r.mismatched}, {"words", r.words}};
  if (r.first) j["first"] = *r.first;
  return j;
}
json body(const Refusal& r) {
  return {{"error", r.error}, {"step", r.step}, {"code", r.code}, {"unsupported", r.not_advertised}};
}

template <class Reply>
Result<Reply> decode_reply(std::string_view payload) {
  auto j = wire::parse_object(payload, kReply, kMaxMessageBytes);
  if (!j) return std::move(j).error();
  Fields f(*j, kReply);
  if (j->contains("error")) {
    Refusal r;
    r.error = f.text("error");
    r.step = f.text("step");
    r.code = f.text("code");
    r.not_advertised = f.boolean("unsupported");
    if (auto e = f.finish()) return std::move(*e);
    return Error{r.step.empty() ? std::string("producer") : r.step,
                 r.not_advertised ? ErrorKind::unsupported : ErrorKind::driver, r.code, "server: " + r.error};
  }
  Reply r;
  if constexpr (std::is_same_v<Reply, Ok>) {
    if (!f.boolean("ok")) f.refuse("ok", "false is not accepted: a refusal carries \"error\"");
  } else if constexpr (std::is_same_v<Reply, Released>) {
    if (!f.boolean("ok")) f.refuse("ok", "false is not accepted: a refusal carries \"error\"");
    r.t = f.number("t");
  } else if constexpr (std::is_same_v<Reply, Pong>) {
    r.t = f.number("t");
  } else if constexpr (std::is_same_v<Reply, PingGpuReply>) {
    r.t = f.absent_or_number("t");
    r.gpu = gpu_end(f);
  } else if constexpr (std::is_same_v<Reply, Drained>) {
    r.drained = f.boolean("drained");
    r.gpu = gpu_end(f);
  } else if constexpr (std::is_same_v<Reply, WaitReply>) {
    r.signalled = f.boolean("signalled");
    r.code = f.text("code", 64);
  } else if constexpr (std::is_same_v<Reply, ObserveReply>) {
    r.fence = f.boolean("fence");
    r.marker = f.boolean("marker");
    r.counter = f.absent_or_whole("counter");
  } else if constexpr (std::is_same_v<Reply, CheckReply>) {
    r.mismatched = f.whole("mismatched");
    r.words = f.whole("words");
    r.first = f.absent_or_whole("first");
  }
  return finished<Reply>(f, std::move(r));
}

template Result<Ok> decode_reply<Ok>(std::string_view);
template Result<Released> decode_reply<Released>(std::string_view);
template Result<Pong> decode_reply<Pong>(std::string_view);
template Result<PingGpuReply> decode_reply<PingGpuReply>(std::string_view);
template Result<Drained> decode_reply<Drained>(std::string_view);
template Result<WaitReply> decode_reply<WaitReply>(std::string_view);
template Result<ObserveReply> decode_reply<ObserveReply>(std::string_view);
template Result<CheckReply> decode_reply<CheckReply>(std::string_view);

}  // namespace extmem::probe::s1
