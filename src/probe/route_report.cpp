#include "probe/route_report.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "probe/measure_codec.h"

namespace extmem::probe {
namespace {

using nlohmann::json;
constexpr std::size_t kMaxString = 4096;
constexpr std::size_t kMaxLegs = 16;

json opt(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

Error bad(const std::string& what) { return Error{"decode report", ErrorKind::protocol, {}, what}; }

bool get_string(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  return out.size() <= kMaxString;
}

bool get_opt(const json& j, const char* key, std::optional<std::string>& out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  if (it->is_null()) return true;
  if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxString) return false;
  out = it->get<std::string>();
  return true;
}

// The first key of object `j` that is not in `known`, if any: a report carries only what encode() writes.
std::optional<std::string> unknown_key(const json& j, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) return key.substr(0, 64);
  return std::nullopt;
}

bool get_bool(const json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return false;
  out = it->get<bool>();
  return true;
}

}  // namespace

json sync_hold_json(const SyncHold& h) {
  return {{"leg", h.leg},           {"ungated_us", h.ungated_us}, {"samples", h.samples},
          {"factor", h.factor},     {"floor_ms", h.floor_ms},     {"ceiling_ms", h.ceiling_ms},
          {"wanted_ms", h.wanted_ms}, {"hold_ms", h.hold_ms},     {"over_ceiling", h.over_ceiling}};
}

Result<SyncHold> sync_hold_from_json(const json& j) {
  auto no = [](const char* what) { return Error{"decode report", ErrorKind::protocol, {}, what}; };
  if (!j.is_object()) return no("not an object");
  if (unknown_key(j, {"leg", "ungated_us", "samples", "factor", "floor_ms", "ceiling_ms", "wanted_ms", "hold_ms",
                      "over_ceiling"}))
    return no("an unknown field");
  SyncHold h;
  if (!get_string(j, "leg", h.leg) || h.leg.size() > 32) return no("leg missing, mistyped or longer than 32");
  auto num = j.find("ungated_us");
  if (num == j.end() || !num->is_number() || !(num->get<double>() >= 0)) return no("ungated_us missing or negative");
  h.ungated_us = num->get<double>();
  for (auto [key, field] : {std::pair{"floor_ms", &h.floor_ms}, std::pair{"ceiling_ms", &h.ceiling_ms},
                            std::pair{"wanted_ms", &h.wanted_ms}, std::pair{"hold_ms", &h.hold_ms}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned()) return no("a milliseconds field missing or not unsigned");
    *field = it->get<std::uint64_t>();
  }
  for (auto [key, field] : {std::pair{"samples", &h.samples}, std::pair{"factor", &h.factor}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() > 1'000'000)
      return no("samples or factor missing or out of range");
    *field = it->get<std::uint32_t>();
  }
  if (!get_bool(j, "over_ceiling", h.over_ceiling)) return no("over_ceiling missing or not a boolean");
  if (h.hold_ms > h.wanted_ms || h.hold_ms > h.ceiling_ms || h.over_ceiling != (h.wanted_ms > h.ceiling_ms))
    return no("hold_ms, wanted_ms, ceiling_ms and over_ceiling disagree");
  return h;
}

std::string encode(const RouteReport& r) {
  json legs = json::array();
  for (const Leg& l : r.legs) {
    legs.push_back({{"name", l.name}, {"decisive", l.decisive}, {"attempted", l.attempted}, {"read_ok", l.read_ok},
                    {"write_ok", l.write_ok}, {"failed_step", l.failed_step}, {"code", l.code}, {"note", l.note}});
  }
  json j = {{"unsupported", opt(r.facts.unsupported)}, {"skip", opt(r.facts.skip)}, {"fatal", opt(r.facts.fatal)},
            {"legs", legs}, {"detail", r.detail}};
  if (r.facts.soak)
    j["soak"] = {{"stale", r.facts.soak->stale}, {"words", r.facts.soak->words}, {"rounds", r.facts.soak->rounds}};
  if (!r.facts.sync_holds.empty()) {
    json holds = json::array();
    for (const SyncHold& h : r.facts.sync_holds) holds.push_back(sync_hold_json(h));
    j["sync_holds"] = std::move(holds);
  }
  if (r.measure) j["measure"] = to_json(*r.measure);
  if (r.facts.stop_kind) j["stop_kind"] = to_string(*r.facts.stop_kind);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<RouteReport> decode_report(const std::string& payload) {
  json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not JSON");
  if (!j.is_object()) return bad("not a JSON object");
  if (auto k = unknown_key(j, {"unsupported", "skip", "fatal", "stop_kind", "legs", "detail", "soak", "sync_holds", "measure"}))
    return bad("unknown field \"" + *k +
               "\": unsupported, skip, fatal, stop_kind, legs, detail, soak, sync_holds, measure are accepted");
  RouteReport r;
  if (!get_opt(j, "unsupported", r.facts.unsupported) || !get_opt(j, "skip", r.facts.skip) ||
      !get_opt(j, "fatal", r.facts.fatal))
    return bad("unsupported/skip/fatal missing or not string|null");
  if (auto k = j.find("stop_kind"); k != j.end()) {
    r.facts.stop_kind = k->is_string() ? error_kind_from_string(k->get_ref<const std::string&>()) : std::nullopt;
    if (!r.facts.stop_kind) return bad("stop_kind is not an error kind's name");
  }
  auto legs = j.find("legs");
  if (legs == j.end() || !legs->is_array() || legs->size() > kMaxLegs) return bad("legs missing or not an array of <= 16");
  for (const json& l : *legs) {
    if (!l.is_object()) return bad("leg is not an object");
    if (auto k = unknown_key(l, {"name", "decisive", "attempted", "read_ok", "write_ok", "failed_step", "code", "note"}))
      return bad("unknown leg field \"" + *k + "\"");
    Leg leg;
    if (!get_string(l, "name", leg.name) || !get_bool(l, "decisive", leg.decisive) ||
        !get_bool(l, "attempted", leg.attempted) || !get_bool(l, "read_ok", leg.read_ok) ||
        !get_bool(l, "write_ok", leg.write_ok) || !get_string(l, "failed_step", leg.failed_step) ||
        !get_string(l, "code", leg.code) || !get_string(l, "note", leg.note))
      return bad("leg field missing or mistyped");
    if (leg.name.empty() || leg.name.size() > 32) return bad("leg name empty or longer than 32");
    r.legs.push_back(std::move(leg));
  }
  if (auto soak = j.find("soak"); soak != j.end()) {
    if (!soak->is_object()) return bad("soak is not an object");
    if (unknown_key(*soak, {"stale", "words", "rounds"})) return bad("an unknown soak field");
    SoakCount c;
    for (auto [key, field] : {std::pair{"stale", &c.stale}, std::pair{"words", &c.words}, std::pair{"rounds", &c.rounds}}) {
      auto it = soak->find(key);
      if (it == soak->end() || !it->is_number_unsigned()) return bad("soak field missing or not unsigned");
      *field = it->get<std::uint64_t>();
    }
    if (c.stale > c.words) return bad("soak counts more stale words than words");
    r.facts.soak = c;
  }
  if (auto holds = j.find("sync_holds"); holds != j.end()) {
    if (!holds->is_array() || holds->size() > kMaxLegs) return bad("sync_holds is not an array of <= 16");
    for (const json& h : *holds) {
      auto parsed = sync_hold_from_json(h);
      if (!parsed) return bad("sync_holds entry: " + parsed.error().detail);
      r.facts.sync_holds.push_back(std::move(*parsed));
    }
  }
  if (auto m = j.find("measure"); m != j.end() && !m->is_null()) {
    auto decoded = decode_measurement(*m, "decode report.measure");
    if (!decoded) return std::move(decoded).error();
    r.measure = std::move(*decoded);
  }
  auto detail = j.find("detail");
  if (detail == j.end() || !detail->is_array() || detail->size() > 64) return bad("detail missing or not an array");
  for (const json& d : *detail) {
    if (!d.is_string() || d.get_ref<const std::string&>().size() > kMaxString) return bad("detail entry not a string");
    r.detail.push_back(d.get<std::string>());
  }
  return r;
}

}  // namespace extmem::probe
