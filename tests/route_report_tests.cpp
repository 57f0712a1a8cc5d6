// Tests of the child's JSON route report (src/probe/route_report.h): the round
// trip, and that decode_report rejects every malformed report with a protocol
// error and never throws (a child is untrusted input to the parent).
#include "probe/route_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

using extmem::ErrorKind;
using extmem::Leg;
using extmem::probe::decode_report;
using extmem::probe::encode;
using extmem::probe::RouteReport;
using nlohmann::json;

Leg make_leg(std::string name, bool decisive, bool attempted, bool read_ok, bool write_ok, std::string step = {},
             std::string code = {}, std::string note = {}) {
  Leg l;
  l.name = std::move(name);
  l.decisive = decisive;
  l.attempted = attempted;
  l.read_ok = read_ok;
  l.write_ok = write_ok;
  l.failed_step = std::move(step);
  l.code = std::move(code);
  l.note = std::move(note);
  return l;
}

RouteReport sample() {
  RouteReport r;
  r.legs.push_back(make_leg("rawmmap", false, true, false, false, "", "", "payloadAt=4096"));
  r.legs.push_back(make_leg("vkimport", true, true, true, true));
  r.legs.push_back(make_leg("gpu", true, true, true, false, "vkQueueSubmit", "VK_ERROR_DEVICE_LOST"));
  r.detail = {"memType=2", "dedicated=yes"};
  return r;
}

// A valid report as a JSON value, to be damaged by the rejection tests.
json valid_json() { return json::parse(encode(sample())); }

void expect_equal_legs(const Leg& a, const Leg& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.decisive, b.decisive);
  EXPECT_EQ(a.attempted, b.attempted);
  EXPECT_EQ(a.read_ok, b.read_ok);
  EXPECT_EQ(a.write_ok, b.write_ok);
  EXPECT_EQ(a.failed_step, b.failed_step);
  EXPECT_EQ(a.code, b.code);
  EXPECT_EQ(a.note, b.note);
}

// Decodes `payload` expecting a protocol error with step "decode report", never an exception.
void expect_rejected(const std::string& payload) {
  extmem::Result<RouteReport> r = extmem::Error{};
  ASSERT_NO_THROW(r = decode_report(payload)) << payload.substr(0, 200);
  ASSERT_FALSE(r.ok()) << "accepted: " << payload.substr(0, 200);
  EXPECT_EQ(r.error().kind, ErrorKind::protocol);
  EXPECT_EQ(r.error().step, "decode report");
}

void expect_accepted(const std::string& payload) {
  extmem::Result<RouteReport> r = extmem::Error{};
  ASSERT_NO_THROW(r = decode_report(payload));
  EXPECT_TRUE(r.ok()) << r.error().message() << " for " << payload.substr(0, 200);
}

// Every leg field, the detail list, and null facts survive encode then decode.
TEST(RouteReportRoundTrip, LegsAndDetail) {
  const RouteReport in = sample();
  auto out = decode_report(encode(in));
  ASSERT_TRUE(out.ok()) << out.error().message();
  ASSERT_EQ(out->legs.size(), in.legs.size());
  for (std::size_t i = 0; i < in.legs.size(); ++i) {
    SCOPED_TRACE(i);
    expect_equal_legs(out->legs[i], in.legs[i]);
  }
  EXPECT_EQ(out->detail, in.detail);
  EXPECT_FALSE(out->facts.unsupported.has_value());
  EXPECT_FALSE(out->facts.skip.has_value());
  EXPECT_FALSE(out->facts.fatal.has_value());
}

// Set facts (unsupported, skip, fatal) survive encode then decode, each in its own field.
TEST(RouteReportRoundTrip, Facts) {
  RouteReport in;
  in.facts.unsupported = "DMA_BUF not exportable";
  in.facts.skip = "Android-only";
  in.facts.fatal = "timeout in vkMapMemory";
  auto out = decode_report(encode(in));
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->facts.unsupported, in.facts.unsupported);
  EXPECT_EQ(out->facts.skip, in.facts.skip);
  EXPECT_EQ(out->facts.fatal, in.facts.fatal);
  EXPECT_TRUE(out->legs.empty());
  EXPECT_TRUE(out->detail.empty());
}

// An empty-string fact is kept as set-but-empty, distinct from absent.
TEST(RouteReportRoundTrip, EmptyFactIsNotAbsent) {
  RouteReport in;
  in.facts.skip = "";
  auto out = decode_report(encode(in));
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->facts.skip.has_value());
  EXPECT_EQ(*out->facts.skip, "");
}

// Special characters (quotes, backslashes, newlines, non-ASCII) survive the round trip.
TEST(RouteReportRoundTrip, SpecialCharacters) {
  RouteReport in;
  in.legs.push_back(make_leg("gl", true, true, false, false, "glImportMemoryFdEXT(\"x\"\\n)\n", "GL_INVALID_VALUE",
                             "ü…\t"));
  in.detail = {"ladder: a=1\nb=2"};
  auto out = decode_report(encode(in));
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_equal_legs(out->legs.at(0), in.legs[0]);
  EXPECT_EQ(out->detail, in.detail);
}

// encode of invalid UTF-8 does not throw, and its output decodes.
TEST(RouteReportRoundTrip, InvalidUtf8IsEncodable) {
  RouteReport in;
  in.legs.push_back(make_leg("gpu", true, true, true, true, "", "\xff\xfe bad", ""));
  std::string wire;
  ASSERT_NO_THROW(wire = encode(in));
  auto out = decode_report(wire);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->legs.at(0).name, "gpu");
}

// The S1 rows' calibrated holds survive the round trip, field by field.
TEST(RouteReportRoundTrip, SyncHolds) {
  RouteReport in;
  extmem::SyncHold h;
  h.leg = "order";
  h.ungated_us = 412.5;
  h.samples = 3;
  h.factor = 20;
  h.floor_ms = 20;
  h.ceiling_ms = 3000;
  h.wanted_ms = 20;
  h.hold_ms = 20;
  in.facts.sync_holds.push_back(h);
  h.leg = "cudawait-timeline";
  h.wanted_ms = 4000;
  h.hold_ms = 3000;
  h.over_ceiling = true;
  in.facts.sync_holds.push_back(h);
  auto out = decode_report(encode(in));
  ASSERT_TRUE(out.ok()) << out.error().message();
  ASSERT_EQ(out->facts.sync_holds.size(), 2u);
  const extmem::SyncHold& b = out->facts.sync_holds[1];
  EXPECT_EQ(b.leg, "cudawait-timeline");
  EXPECT_DOUBLE_EQ(b.ungated_us, 412.5);
  EXPECT_EQ(b.samples, 3u);
  EXPECT_EQ(b.factor, 20u);
  EXPECT_EQ(b.floor_ms, 20u);
  EXPECT_EQ(b.ceiling_ms, 3000u);
  EXPECT_EQ(b.wanted_ms, 4000u);
  EXPECT_EQ(b.hold_ms, 3000u);
  EXPECT_TRUE(b.over_ceiling);
  EXPECT_EQ(out->facts.sync_holds[0].leg, "order");
  EXPECT_FALSE(out->facts.sync_holds[0].over_ceiling);
}

// A hold entry that is mistyped, or whose numbers contradict each other, is rejected.
TEST(RouteReportLimits, BadSyncHoldsRejected) {
  RouteReport in;
  extmem::SyncHold h;
  h.leg = "order";
  h.samples = 3;
  h.factor = 20;
  h.floor_ms = h.wanted_ms = h.hold_ms = 20;
  h.ceiling_ms = 3000;
  in.facts.sync_holds.push_back(h);
  const json good = json::parse(encode(in));
  expect_accepted(good.dump());
  auto damaged = [&](auto&& change) {
    json j = good;
    change(j["sync_holds"][0]);
    return j.dump();
  };
  expect_rejected(damaged([](json& e) { e["hold_ms"] = 30; }));           // above wanted_ms
  expect_rejected(damaged([](json& e) { e["over_ceiling"] = true; }));    // wanted is not over the ceiling
  expect_rejected(damaged([](json& e) { e["ungated_us"] = -1.0; }));
  expect_rejected(damaged([](json& e) { e["floor_ms"] = "20"; }));
  expect_rejected(damaged([](json& e) { e.erase("factor"); }));
  expect_rejected(damaged([](json& e) { e["leg"] = std::string(33, 'l'); }));
  expect_rejected(damaged([](json& e) { e = json::array(); }));
  expect_rejected(damaged([](json& e) { e["future"] = 1; }));
  json not_array = good;
  not_array["sync_holds"] = json::object();
  expect_rejected(not_array.dump());
}

// Exactly 16 legs is accepted.
TEST(RouteReportLimits, SixteenLegsAccepted) {
  RouteReport in;
  for (int i = 0; i < 16; ++i) in.legs.push_back(make_leg("leg" + std::to_string(i), true, true, true, true));
  auto out = decode_report(encode(in));
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->legs.size(), 16u);
}

// 17 legs is rejected.
TEST(RouteReportLimits, SeventeenLegsRejected) {
  RouteReport in;
  for (int i = 0; i < 17; ++i) in.legs.push_back(make_leg("leg" + std::to_string(i), true, true, true, true));
  expect_rejected(encode(in));
}

// A string of exactly 4096 bytes is accepted in every string field.
TEST(RouteReportLimits, StringsAt4096Accepted) {
  const std::string s(4096, 'a');
  RouteReport in;
  in.facts.fatal = s;
  in.legs.push_back(make_leg("gpu", true, true, false, false, s, s, s));
  in.detail = {s};
  auto out = decode_report(encode(in));
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->legs.at(0).code.size(), 4096u);
}

// A string of 4097 bytes is rejected, whichever string field it is in.
TEST(RouteReportLimits, StringsOver4096Rejected) {
  const std::string s(4097, 'a');
  for (const char* field : {"failed_step", "code", "note"}) {
    SCOPED_TRACE(field);
    json j = valid_json();
    j["legs"][0][field] = s;
    expect_rejected(j.dump());
  }
  for (const char* fact : {"unsupported", "skip", "fatal"}) {
    SCOPED_TRACE(fact);
    json j = valid_json();
    j[fact] = s;
    expect_rejected(j.dump());
  }
  json j = valid_json();
  j["detail"][0] = s;
  expect_rejected(j.dump());
}

// An empty leg name is rejected (the name is the trace key).
TEST(RouteReportLimits, EmptyLegNameRejected) {
  json j = valid_json();
  j["legs"][1]["name"] = "";
  expect_rejected(j.dump());
}

// A leg name over 4096 bytes is rejected.
TEST(RouteReportLimits, OverlongLegNameRejected) {
  json j = valid_json();
  j["legs"][1]["name"] = std::string(4097, 'n');
  expect_rejected(j.dump());
}

// A payload that is not JSON is rejected.
TEST(RouteReportDecode, NotJsonRejected) {
  for (const char* p : {"", "{", "not json", "{\"legs\":[}", "\x01\x02", "{}}"}) {
    SCOPED_TRACE(p);
    expect_rejected(p);
  }
}

// JSON that is not an object (array, number, string, null, bool) is rejected.
TEST(RouteReportDecode, NonObjectRejected) {
  for (const char* p : {"[]", "42", "\"report\"", "null", "true", "[{\"legs\":[]}]"}) {
    SCOPED_TRACE(p);
    expect_rejected(p);
  }
}

// Each top-level field missing is rejected.
TEST(RouteReportDecode, MissingTopLevelFieldRejected) {
  for (const char* key : {"unsupported", "skip", "fatal", "legs", "detail"}) {
    SCOPED_TRACE(key);
    json j = valid_json();
    j.erase(key);
    expect_rejected(j.dump());
  }
}

// Each leg field missing is rejected.
TEST(RouteReportDecode, MissingLegFieldRejected) {
  for (const char* key : {"name", "decisive", "attempted", "read_ok", "write_ok", "failed_step", "code", "note"}) {
    SCOPED_TRACE(key);
    json j = valid_json();
    j["legs"][1].erase(key);
    expect_rejected(j.dump());
  }
}

// A boolean leg field given as a string or number is rejected.
TEST(RouteReportDecode, MistypedLegBoolRejected) {
  for (const char* key : {"decisive", "attempted", "read_ok", "write_ok"}) {
    SCOPED_TRACE(key);
    json j = valid_json();
    j["legs"][1][key] = "true";
    expect_rejected(j.dump());
    j["legs"][1][key] = 1;
    expect_rejected(j.dump());
  }
}

// A string leg field given as a number, null or object is rejected.
TEST(RouteReportDecode, MistypedLegStringRejected) {
  for (const char* key : {"name", "failed_step", "code", "note"}) {
    SCOPED_TRACE(key);
    for (const json& bad : {json(7), json(nullptr), json::object(), json::array()}) {
      json j = valid_json();
      j["legs"][1][key] = bad;
      expect_rejected(j.dump());
    }
  }
}

// A fact that is neither a string nor null is rejected.
TEST(RouteReportDecode, MistypedFactRejected) {
  for (const char* key : {"unsupported", "skip", "fatal"}) {
    SCOPED_TRACE(key);
    for (const json& bad : {json(false), json(1), json::array(), json::object()}) {
      json j = valid_json();
      j[key] = bad;
      expect_rejected(j.dump());
    }
  }
}

// legs or detail that are not arrays, a leg that is not an object, or a detail entry that is not a string are rejected.
TEST(RouteReportDecode, MistypedContainersRejected) {
  json j = valid_json();
  j["legs"] = json::object();
  expect_rejected(j.dump());
  j = valid_json();
  j["legs"][0] = "rawmmap";
  expect_rejected(j.dump());
  j = valid_json();
  j["detail"] = "memType=2";
  expect_rejected(j.dump());
  j = valid_json();
  j["detail"][0] = 2;
  expect_rejected(j.dump());
}

// A field encode() does not write is refused, at the top, in a leg and in the
// soak: the halves are this binary, and a report may one day cross from another process.
TEST(RouteReportDecode, UnknownFieldsRejected) {
  json j = valid_json();
  j["future"] = {1, 2, 3};
  expect_rejected(j.dump());
  j = valid_json();
  j["legs"][0]["future"] = "x";
  expect_rejected(j.dump());
  j = valid_json();
  j["soak"] = {{"stale", 0}, {"words", 1}, {"rounds", 1}, {"future", 1}};
  expect_rejected(j.dump());
}

// Every strict prefix of a valid report is rejected without throwing (a truncated message).
TEST(RouteReportDecode, EveryTruncationRejected) {
  const std::string full = encode(sample());
  for (std::size_t n = 0; n < full.size(); ++n) expect_rejected(full.substr(0, n));
  expect_accepted(full);
}

// Hostile inputs (deep nesting, invalid UTF-8, NULs, huge numbers) are rejected without throwing or crashing.
TEST(RouteReportDecode, HostileInputsNeverThrow) {
  std::vector<std::string> inputs = {
      std::string(100000, '[') + std::string(100000, ']'),
      "{\"legs\":" + std::string(50000, '[') + std::string(50000, ']') + "}",
      "{\"unsupported\":\"\xff\xfe\",\"skip\":null,\"fatal\":null,\"legs\":[],\"detail\":[]}",
      std::string("{\"unsupported\":null,\0\"skip\":null}", 33),
      "{\"unsupported\":1e999999,\"skip\":null,\"fatal\":null,\"legs\":[],\"detail\":[]}",
      "{\"unsupported\":null,\"skip\":null,\"fatal\":null,\"legs\":[{\"name\":\"\\ud800\"}],\"detail\":[]}",
  };
  for (const std::string& in : inputs) expect_rejected(in);
}

}  // namespace
