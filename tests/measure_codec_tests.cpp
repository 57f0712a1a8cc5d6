// The --measure figures' codec (probe/measure_codec.h): every field of the
// typed record survives the round trip under its documented key, and the
// decoder refuses, naming the field, what no half sends.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/probe/measure_figures.h"
#include "probe/measure_codec.h"
#include "support/run_shell.h"

namespace {

using extmem::ErrorKind;
using extmem::probe::Figure;
using extmem::probe::LegFigures;
using extmem::probe::Measurement;
using nlohmann::json;

// Sets every optional member to a value that differs from field to field.
struct FillAll {
  int next = 1;
  void operator()(const char*, std::optional<Figure>& f) {
    f = Figure{.median = next + 0.5, .min = next + 0.25, .max = next + 0.75, .n = 3u + next, .clock = "wall"};
    ++next;
  }
  void operator()(const char*, std::optional<extmem::probe::GpuTimestamp>& t) { t = {{1.0 + next++, 64}}; }
  void operator()(const char*, std::optional<extmem::probe::GpuWakeClock>& c) {
    c = {{"vk-calibrated-timestamp", "CLOCK_MONOTONIC", 100u + next++}};
  }
  void operator()(const char*, std::optional<double>& d) { d = 0.5 + next++; }
  void operator()(const char*, std::optional<std::uint64_t>& u) { u = 1000u + next++; }
  void operator()(const char* key, std::optional<std::string>& s) { s = std::string(key) + " text"; }
  void operator()(const char*, std::optional<bool>& b) { b = (next++ % 2) == 0; }
};

Measurement everything() {
  Measurement m{.size = 64u << 20, .repeats = 7};
  FillAll fill;
  extmem::probe::visit_baseline_fields(fill, m.baseline);
  extmem::probe::visit_fields(fill, m.legs["vkimport"]);
  extmem::probe::visit_fields(fill, m.legs["gpu"]);
  extmem::probe::visit_route_fields(fill, m.route);
  m.pcie_link.emplace();
  extmem::probe::visit_pcie_fields(fill, *m.pcie_link);
  return m;
}

std::string refused_step(const json& j) {
  auto r = extmem::probe::decode_measurement(j, "m");
  if (r) return "(accepted)";
  EXPECT_EQ(r.error().kind, ErrorKind::protocol);
  return r.error().step;
}

TEST(MeasureCodec, EveryFieldRoundTripsUnderItsKey) {
  const Measurement m = everything();
  const json j = extmem::probe::to_json(m);
  std::vector<std::string> order;
  extmem::probe::visit_fields([&](const char* key, const auto&) { order.emplace_back(key); }, m.legs.at("gpu"));
  // In key order, as the JSON object is: the text line and the Prometheus file follow it.
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  order.clear();
  extmem::probe::visit_route_fields([&](const char* key, const auto&) { order.emplace_back(key); }, m.route);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  std::set<std::string> keys;
  extmem::probe::visit_fields([&](const char* key, const auto&) { keys.insert(key); }, m.legs.at("gpu"));
  ASSERT_EQ(keys.size(), 48u) << "a LegFigures field added: give it a key in visit_fields";
  for (const std::string& k : keys) EXPECT_TRUE(j["legs"]["gpu"].contains(k)) << k;
  EXPECT_EQ(j["legs"]["gpu"].size(), keys.size());
  EXPECT_EQ(j["route"].size(), 8u);
  EXPECT_EQ(j["pcie_link"].size(), 5u);
  EXPECT_EQ(j["baseline"].size(), 3u);
  // The keys readers of the output document know (docs/probe.md, "--measure").
  EXPECT_TRUE(j["legs"]["gpu"]["gpu_out_gbps"].contains("median"));
  EXPECT_TRUE(j["legs"]["gpu"]["shader_in_gbps"].contains("clock"));
  EXPECT_TRUE(j["legs"]["gpu"]["gpu_timestamp"].contains("period_ns"));
  EXPECT_TRUE(j["route"]["gpu_wake_clock"].contains("max_deviation_ns"));

  auto back = extmem::probe::decode_measurement(j, "m");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, m);
  EXPECT_EQ(extmem::probe::to_json(*back), j);
}

// Every field a half can set is one the document's schema accepts where it goes:
// the S1 rows' gpu_wake_clock and gpu_clock_fallback were refused there until
// an H100 run set them (lavapipe's S1 rows are UNSUPPORTED).
// FillAll with the values the schema enumerates or bounds where a half writes
// one of a few words or a small count.
struct FillValid : FillAll {
  using FillAll::operator();
  void operator()(const char* key, std::optional<std::string>& s) {
    static const std::map<std::string, std::string> kWords = {
        {"gpu_clock", "vk-timestamp"}, {"shader_clock", "wall"}, {"gpu_shared_memory", "host"}, {"image_layout", "GENERAL"}};
    const auto it = kWords.find(key);
    s = it != kWords.end() ? it->second : std::string(key) + " text";
  }
  void operator()(const char* key, std::optional<std::uint64_t>& u) {
    u = std::string(key).ends_with("_copies_per_sample") ? 8u : 1000u + next++;
  }
};

TEST(MeasureCodec, EveryFieldIsOneTheSchemaAccepts) {
  extmem::probe::RowMeasure row{.figures = {.size = 64u << 20, .repeats = 7}};
  Measurement& m = row.figures;
  FillValid fill;
  extmem::probe::visit_baseline_fields(fill, m.baseline);
  extmem::probe::visit_fields(fill, m.legs["gpu"]);
  extmem::probe::visit_route_fields(fill, m.route);
  m.pcie_link.emplace();
  extmem::probe::visit_pcie_fields(fill, *m.pcie_link);
  const std::string path = ::testing::TempDir() + "/measure_everything.json";
  std::ofstream(path) << extmem::probe::to_json(row).dump();
  const auto r = extmem::test::run_shell(
      "python3 -c \"import json, sys, jsonschema; s = json.load(open(sys.argv[1])); "
      "sub = {'\\$schema': s['\\$schema'], '\\$defs': s['\\$defs'], '\\$ref': '#/\\$defs/measure'}; "
      "c = jsonschema.validators.validator_for(sub); errs = list(c(sub).iter_errors(json.load(open(sys.argv[2])))); "
      "[print('invalid at', list(e.absolute_path), e.message[:200]) for e in errs]; sys.exit(1 if errs else 0)\" " +
      std::string(EXTMEM_SOURCE_DIR) + "/docs/probe-result.schema.json " + path);
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(MeasureCodec, AFigureWithoutSamplesIsItsCountAlone) {
  Measurement m;
  m.legs["vkimport"].import_us = Figure{};
  const json j = extmem::probe::to_json(m);
  EXPECT_EQ(j["legs"]["vkimport"]["import_us"], (json{{"n", 0}}));
  EXPECT_EQ(j["baseline"], json::object());
  EXPECT_FALSE(j.contains("pcie_link"));
  auto back = extmem::probe::decode_measurement(j, "m");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, m);
}

TEST(MeasureCodec, RefusesWhatNoHalfSendsNamingTheField) {
  const json good = extmem::probe::to_json(everything());
  auto with = [&](const json::json_pointer& at, const json& value) {
    json j = good;
    j[at] = value;
    return j;
  };
  auto without = [&](const json::json_pointer& at) {
    json j = good;
    j[at.parent_pointer()].erase(at.back());
    return j;
  };
  EXPECT_EQ(refused_step(json::array()), "m");
  EXPECT_EQ(refused_step(without("/size"_json_pointer)), "m.size");
  EXPECT_EQ(refused_step(with("/repeats"_json_pointer, 101)), "m.repeats");
  EXPECT_EQ(refused_step(without("/route"_json_pointer)), "m.route");
  EXPECT_EQ(refused_step(with("/legs/gpu/gpu_out_gbps/median"_json_pointer, "2")), "m.legs.gpu.gpu_out_gbps.median");
  EXPECT_EQ(refused_step(with("/legs/gpu/gpu_out_gbps/n"_json_pointer, -1)), "m.legs.gpu.gpu_out_gbps.n");
  EXPECT_EQ(refused_step(without("/legs/gpu/gpu_out_gbps/min"_json_pointer)), "m.legs.gpu.gpu_out_gbps.n");
  EXPECT_EQ(refused_step(with("/legs/gpu/image_restored"_json_pointer, 1)), "m.legs.gpu.image_restored");
  EXPECT_EQ(refused_step(with("/legs/gpu/image_memory_type"_json_pointer, 1.5)), "m.legs.gpu.image_memory_type");
  EXPECT_EQ(refused_step(with("/legs/gpu/gpu_error"_json_pointer, std::string(5000, 'x'))), "m.legs.gpu.gpu_error");
  EXPECT_EQ(refused_step(with("/legs/gpu/gpu_bogus_gbps"_json_pointer, json::object())), "m.legs.gpu");
  EXPECT_EQ(refused_step(with("/legs/has space"_json_pointer, json::object())), "m.legs");
  EXPECT_EQ(refused_step(with("/legs/gpu"_json_pointer, json::array())), "m.legs.gpu");
  EXPECT_EQ(refused_step(with("/route/export_us"_json_pointer, json{{"n", 0}, {"median", 1.0}})), "m.route.export_us.n");
  EXPECT_EQ(refused_step(with("/route/gpu_wake_clock/clock"_json_pointer, 7)), "m.route.gpu_wake_clock.clock");
  EXPECT_EQ(refused_step(with("/pcie_link/width"_json_pointer, "16")), "m.pcie_link.width");
  EXPECT_EQ(refused_step(with("/baseline/extra"_json_pointer, 1)), "m.baseline");
  EXPECT_EQ(refused_step(with("/extra"_json_pointer, 1)), "m");
  json many = good;
  for (int i = 0; i < 17; ++i) many["legs"]["leg" + std::to_string(i)] = json::object();
  EXPECT_EQ(refused_step(many), "m.legs");
}

}  // namespace
