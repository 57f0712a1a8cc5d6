#include "probe/measure_codec.h"

#include <fmt/format.h>

#include "probe/json_kind.h"
#include "probe/wire_fields.h"

namespace extmem::probe {
namespace {

using nlohmann::json;
using wire::Fields;

json encode(const Figure& f) {
  json j = {{"n", f.n}};
  if (f.n > 0) {
    j["median"] = f.median;
    j["min"] = f.min;
    j["max"] = f.max;
  }
  if (f.clock) j["clock"] = *f.clock;
  return j;
}
json encode(const GpuTimestamp& t) { return {{"period_ns", t.period_ns}, {"valid_bits", t.valid_bits}}; }
json encode(const GpuWakeClock& c) {
  return {{"clock", c.clock}, {"time_domain", c.time_domain}, {"max_deviation_ns", c.max_deviation_ns}};
}
template <class T>
json encode(const T& scalar) {
  return scalar;
}

// The writer every visit list is run with.
struct Put {
  json& j;
  template <class T>
  void operator()(const char* key, const std::optional<T>& v) const {
    if (v) j[key] = encode(*v);
  }
};

Figure figure_of(Fields& f) {
  Figure g;
  g.n = f.whole("n");
  g.clock = f.absent_or_text("clock");
  auto median = f.absent_or_number("median"), min = f.absent_or_number("min"), max = f.absent_or_number("max");
  if ((g.n > 0) != (median && min && max) || (g.n == 0 && (median || min || max))) {
    f.refuse("n", "median, min and max are accepted together with n > 0, and none of them with n = 0");
    return g;
  }
  g.median = median.value_or(0);
  g.min = min.value_or(0);
  g.max = max.value_or(0);
  return g;
}
GpuTimestamp timestamp_of(Fields& f) { return {f.number("period_ns"), f.whole("valid_bits", 64)}; }
GpuWakeClock wake_clock_of(Fields& f) {
  GpuWakeClock c;
  c.clock = f.text("clock", 64);
  c.time_domain = f.text("time_domain", 64);
  c.max_deviation_ns = f.whole("max_deviation_ns");
  return c;
}

// The reader every visit list is run with.
struct Get {
  Fields& f;
  void operator()(const char* key, std::optional<Figure>& v) const { v = wire::nested<Figure>(f, key, figure_of); }
  void operator()(const char* key, std::optional<GpuTimestamp>& v) const {
    v = wire::nested<GpuTimestamp>(f, key, timestamp_of);
  }
  void operator()(const char* key, std::optional<GpuWakeClock>& v) const {
    v = wire::nested<GpuWakeClock>(f, key, wake_clock_of);
  }
  void operator()(const char* key, std::optional<double>& v) const { v = f.absent_or_number(key); }
  void operator()(const char* key, std::optional<std::uint64_t>& v) const { v = f.absent_or_whole(key); }
  void operator()(const char* key, std::optional<std::string>& v) const { v = f.absent_or_text(key); }
  void operator()(const char* key, std::optional<bool>& v) const { v = f.absent_or_boolean(key); }
};

// A nested object that must be present.
template <class T, class One>
T required(Fields& f, const char* key, One one) {
  if (f.get(key, true) == nullptr) return T{};
  return wire::nested<T>(f, key, one).value_or(T{});
}

json legs_json(const std::map<std::string, LegFigures>& legs) {
  json out = json::object();
  for (const auto& [name, leg] : legs) {
    json j = json::object();
    visit_fields(Put{j}, leg);
    out[name] = std::move(j);
  }
  return out;
}

// The "legs" object: leg name -> its figures.
std::map<std::string, LegFigures> legs_of(Fields& f) {
  std::map<std::string, LegFigures> legs;
  const json* all = f.get("legs", true);
  if (all == nullptr) return legs;
  if (!all->is_object() || all->size() > kMaxMeasuredLegs) {
    f.refuse("legs", fmt::format("found {} (of {} entries): an object of at most {} legs is accepted", json_kind(*all),
                                 all->size(), kMaxMeasuredLegs));
    return legs;
  }
  const std::string what = fmt::format("{}.legs", f.what());  // outlives the reader, which keeps a view of it
  Fields by_name(*all, what);
  for (const auto& [name, value] : all->items()) {
    if (!wire::is_word(name)) {
      f.refuse("legs", "a leg name is not a word: 1 to 32 printable characters without spaces are accepted");
      return legs;
    }
    auto leg = wire::nested<LegFigures>(by_name, name.c_str(), [](Fields& one) {
      LegFigures l;
      visit_fields(Get{one}, l);
      return l;
    });
    if (leg) legs.emplace(name, std::move(*leg));
  }
  if (auto e = by_name.finish()) f.adopt(std::move(*e));
  return legs;
}

}  // namespace

json to_json(const Measurement& m) {
  json baseline = json::object(), route = json::object();
  visit_baseline_fields(Put{baseline}, m.baseline);
  visit_route_fields(Put{route}, m.route);
  json j = {{"size", m.size}, {"repeats", m.repeats}, {"baseline", baseline}, {"legs", legs_json(m.legs)}, {"route", route}};
  if (m.pcie_link) {
    json p = json::object();
    visit_pcie_fields(Put{p}, *m.pcie_link);
    j["pcie_link"] = std::move(p);
  }
  return j;
}

json to_json(const RowMeasure& m) {
  json j = {{"run_status", to_string(m.run_status)}};
  if (m.error) {
    j["error"] = *m.error;
    return j;
  }
  j.update(to_json(m.figures));
  return j;
}

Result<Measurement> decode_measurement(const json& j, std::string_view what) {
  if (!j.is_object()) return wire::refusal(what, {}, fmt::format("found {}: an object is accepted", json_kind(j)));
  Fields f(j, what);
  Measurement m;
  m.size = f.whole("size");
  m.repeats = f.whole("repeats", 100);
  m.baseline = required<CpuBaseline>(f, "baseline", [](Fields& b) {
    CpuBaseline c;
    visit_baseline_fields(Get{b}, c);
    return c;
  });
  m.legs = legs_of(f);
  m.route = required<RouteFigures>(f, "route", [](Fields& r) {
    RouteFigures rf;
    visit_route_fields(Get{r}, rf);
    return rf;
  });
  m.pcie_link = wire::nested<PcieLink>(f, "pcie_link", [](Fields& p) {
    PcieLink l;
    visit_pcie_fields(Get{p}, l);
    return l;
  });
  return wire::finished(f, std::move(m));
}

}  // namespace extmem::probe
