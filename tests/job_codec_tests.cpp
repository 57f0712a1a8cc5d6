// Tests of the `job` message (src/probe/job_codec.h): every field survives the
// round trip, and decode_job refuses each kind of malformed job with a protocol
// error naming the field, never throwing (a job crosses a socket).
#include "probe/job_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace {

using extmem::ErrorKind;
using extmem::probe::decode_job;
using extmem::probe::encode_job;
using extmem::probe::HalfParams;
using extmem::probe::Role;
using nlohmann::json;

// Every field away from its default, so a field the codec drops shows.
HalfParams sample() {
  HalfParams p;
  p.row = "T1-opaque-fd";
  p.role = Role::client;
  p.device_index = 2;
  p.layout = {1u << 20, true};
  p.soak_s = 0.25;
  p.measure = true;
  p.measure_repeats = 9;
  p.memory_type = 3;
  p.gl_driver = "zink";
  p.image_width = 640;
  p.image_height = 48;
  p.fd_transport = extmem::os::FdTransport::pidfd;
  p.expect_transport = "tcp";
  return p;
}

json sample_json() { return json::parse(encode_job(sample())); }

// The field a refusal names: its step, "job.FIELD" ("job" for the payload as a whole).
std::string refused_field(const json& j) {
  auto r = decode_job(j.dump());
  EXPECT_FALSE(r.ok()) << j.dump();
  if (r) return "accepted";
  EXPECT_EQ(r.error().kind, ErrorKind::protocol);
  EXPECT_FALSE(r.error().detail.empty());
  return r.error().step;
}

TEST(JobCodec, RoundTripKeepsEveryField) {
  auto back = decode_job(encode_job(sample()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, sample());
}

TEST(JobCodec, RoundTripKeepsTheDefaults) {
  HalfParams p;
  p.row = "T3-memfd-cross-process";
  auto back = decode_job(encode_job(p));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, p);
}

TEST(JobCodec, RefusesWhatIsNotAJsonObject) {
  for (std::string bad : {"", "{", "[]", "42", "null", "\"job\""}) {
    auto r = decode_job(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::protocol);
    EXPECT_EQ(r.error().step, "job");
  }
}

TEST(JobCodec, RefusesAPayloadOverTheBound) {
  json j = sample_json();
  j["row"] = std::string(extmem::probe::kMaxJobBytes, 'x');
  EXPECT_EQ(refused_field(j), "job");
}

TEST(JobCodec, RefusesAMissingFieldByName) {
  for (const char* field : {"row", "role", "size", "soak_s", "measure", "gl_driver", "fd_transport",
                            "expect_transport"}) {
    json j = sample_json();
    j.erase(field);
    EXPECT_EQ(refused_field(j), std::string("job.") + field);
  }
}

TEST(JobCodec, RefusesAnUnknownField) {
  json j = sample_json();
  j["colour"] = "blue";
  EXPECT_EQ(refused_field(j), "job");
}

TEST(JobCodec, RefusesAMistypedField) {
  const std::pair<const char*, json> cases[] = {
      {"row", 7},           {"role", true},          {"size", "65536"},  {"size", 65536.5},
      {"regions_at_end", 1}, {"soak_s", "1s"},       {"measure", "yes"}, {"memory_type", nullptr},
      {"gl_driver", 1},     {"image_width", json::array()}, {"fd_transport", json::object()}};
  for (const auto& [field, value] : cases) {
    json j = sample_json();
    j[field] = value;
    EXPECT_EQ(refused_field(j), std::string("job.") + field) << value.dump();
  }
}

TEST(JobCodec, RefusesValuesOutOfRange) {
  const std::pair<const char*, json> cases[] = {
      {"size", 4096},            {"size", 65537},          {"size", -65536},
      {"size", 1ull << 41},      {"soak_s", -1},           {"soak_s", 3601},
      {"measure_repeats", 0},    {"measure_repeats", 101}, {"memory_type", -2},
      {"memory_type", 32},       {"image_width", 0},       {"image_height", 65537},
      {"device_index", 1024},    {"device_index", 1ull << 63}, {"row", ""},
      {"row", "two words"},      {"row", std::string(129, 'R')}, {"role", "observer"},
      {"gl_driver", "mesa"},     {"fd_transport", "udp"},  {"expect_transport", ""},
      {"expect_transport", std::string(17, 't')}};
  for (const auto& [field, value] : cases) {
    json j = sample_json();
    j[field] = value;
    EXPECT_EQ(refused_field(j), std::string("job.") + field) << value.dump();
  }
}

TEST(JobCodec, RefusesARowNotInTheTable) {
  json j = sample_json();
  j["row"] = "T9-no-such-row";
  EXPECT_EQ(refused_field(j), "job.row");
}

}  // namespace
