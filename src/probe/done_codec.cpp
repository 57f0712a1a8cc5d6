#include "probe/done_codec.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace extmem::probe {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxEntries = 4096;      // fd entries per list
constexpr std::size_t kMaxEntryBytes = 4096;   // "FD -> target": a path is at most PATH_MAX
constexpr std::int64_t kMaxPid = 4194304;      // PID_MAX_LIMIT on 64-bit Linux
constexpr std::int64_t kMaxFds = 1 << 20;      // fs.nr_open's ceiling
constexpr std::int64_t kMaxDelta = 1 << 30;    // live objects, either way

Error done_error(std::string_view field, std::string detail) {
  return Error{field.empty() ? std::string("done") : fmt::format("done.{}", field), ErrorKind::protocol, {},
               std::move(detail)};
}

// Every key of `j` must be in `known`; `where` is "" or "hygiene".
Status only_known(const json& j, std::initializer_list<std::string_view> known, std::string_view where) {
  for (const auto& [key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      return done_error(where, fmt::format("unknown field \"{:.64}\": the fields are {}", key, fmt::join(known, ", ")));
  return {};
}

Result<std::int64_t> whole(const json& j, const char* key, std::string_view field, std::int64_t min, std::int64_t max) {
  auto it = j.find(key);
  if (it == j.end()) return done_error(field, "missing");
  if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
      it->get<std::int64_t>() < min || it->get<std::int64_t>() > max)
    return done_error(field, fmt::format("not accepted: a whole number from {} to {}", min, max));
  return it->get<std::int64_t>();
}

Result<std::vector<std::string>> fd_list(const json& h, const char* key) {
  const std::string field = fmt::format("hygiene.{}", key);
  auto it = h.find(key);
  if (it == h.end()) return done_error(field, "missing (the hygiene is not clean)");
  if (!it->is_array() || it->size() > kMaxEntries)
    return done_error(field, fmt::format("not accepted: an array of at most {} strings", kMaxEntries));
  std::vector<std::string> out;
  for (const json& e : *it) {
    if (!e.is_string() || e.get_ref<const std::string&>().size() > kMaxEntryBytes)
      return done_error(field, fmt::format("an entry is not accepted: a string of at most {} bytes", kMaxEntryBytes));
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<Hygiene> decode_hygiene(const json& h) {
  if (!h.is_object()) return done_error("hygiene", "not accepted: a JSON object");
  Hygiene out;
  auto clean = h.find("clean");
  if (clean == h.end() || !clean->is_boolean()) return done_error("hygiene.clean", "not accepted: true or false");
  if (auto s = only_known(h, {"clean", "fds", "pid", "overlapped_warm_up", "left_open", "closed", "live_delta"}, "hygiene");
      !s)
    return std::move(s).error();
  auto fds = whole(h, "fds", "hygiene.fds", 0, kMaxFds);
  if (!fds) return std::move(fds).error();
  out.fds = static_cast<std::uint32_t>(*fds);
  auto pid = whole(h, "pid", "hygiene.pid", 1, kMaxPid);
  if (!pid) return std::move(pid).error();
  out.pid = *pid;
  if (auto w = h.find("overlapped_warm_up"); w != h.end()) {
    if (!w->is_boolean() || !w->get<bool>()) return done_error("hygiene.overlapped_warm_up", "not accepted: true or absent");
    out.overlapped_warm_up = true;
  }
  if (clean->get<bool>()) {
    for (const char* key : {"left_open", "closed", "live_delta"})
      if (h.contains(key)) return done_error(fmt::format("hygiene.{}", key), "not accepted with \"clean\": true");
    return out;
  }
  auto left = fd_list(h, "left_open");
  if (!left) return std::move(left).error();
  out.left_open = std::move(*left);
  auto closed = fd_list(h, "closed");
  if (!closed) return std::move(closed).error();
  out.closed = std::move(*closed);
  auto live = h.find("live_delta");
  if (live == h.end() || !live->is_object()) return done_error("hygiene.live_delta", "not accepted: a JSON object");
  for (const auto& [name, delta] : live->items()) {
    if (std::find(std::begin(kHygieneCounters), std::end(kHygieneCounters), name) == std::end(kHygieneCounters))
      return done_error("hygiene.live_delta",
                        fmt::format("counter \"{:.64}\" is not accepted: {}", name, fmt::join(kHygieneCounters, ", ")));
    auto n = whole(*live, name.c_str(), "hygiene.live_delta", -kMaxDelta, kMaxDelta);
    if (!n) return std::move(n).error();
    if (*n == 0) return done_error("hygiene.live_delta", "a change of 0 is not accepted (unchanged counters are left out)");
    out.live_delta[name] = *n;
  }
  if (out.clean()) return done_error("hygiene.clean", "false with nothing left open, closed or changed");
  return out;
}

}  // namespace

json hygiene_json(const Hygiene& h) {
  json out = {{"clean", h.clean()}, {"fds", h.fds}, {"pid", h.pid}};
  if (!h.clean()) out.update({{"left_open", h.left_open}, {"closed", h.closed}, {"live_delta", h.live_delta}});
  if (h.overlapped_warm_up) out["overlapped_warm_up"] = true;
  return out;
}

std::string encode_done(const DoneMessage& m) {
  return json{{"exit_code", m.exit_code}, {"hygiene", hygiene_json(m.hygiene)}}.dump(-1, ' ', false,
                                                                                      json::error_handler_t::replace);
}

Result<DoneMessage> decode_done(std::string_view payload) {
  const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return done_error({}, "not accepted: a JSON object");
  if (auto s = only_known(j, {"exit_code", "hygiene"}, {}); !s) return std::move(s).error();
  DoneMessage m;
  auto code = whole(j, "exit_code", "exit_code", 0, 255);
  if (!code) return std::move(code).error();
  m.exit_code = static_cast<int>(*code);
  auto h = j.find("hygiene");
  if (h == j.end()) return done_error("hygiene", "missing");
  auto hygiene = decode_hygiene(*h);
  if (!hygiene) return std::move(hygiene).error();
  m.hygiene = std::move(*hygiene);
  return m;
}

}  // namespace extmem::probe
