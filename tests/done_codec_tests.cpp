// Tests of the warm worker's `done` message (src/probe/done_codec.h): the round
// trip, the output document's shape of the hygiene, and decode_done refusing
// each kind of malformed message with a protocol error naming the field.
#include "probe/done_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace {

using extmem::ErrorKind;
using extmem::probe::decode_done;
using extmem::probe::DoneMessage;
using extmem::probe::encode_done;
using extmem::probe::Hygiene;
using extmem::probe::hygiene_json;
using nlohmann::json;

DoneMessage leaky() {
  DoneMessage m;
  m.exit_code = 1;
  m.hygiene.fds = 12;
  m.hygiene.left_open = {"17 -> /memfd:extmem (deleted)"};
  m.hygiene.closed = {"9 -> socket:[123]"};
  m.hygiene.live_delta = {{"vk_memories", 1}, {"gl_shared_buffers", -2}};
  m.hygiene.overlapped_warm_up = true;
  m.hygiene.pid = 4242;
  return m;
}

DoneMessage clean() {
  DoneMessage m;
  m.hygiene.fds = 8;
  m.hygiene.pid = 77;
  return m;
}

std::string refused_field(const json& j) {
  auto r = decode_done(j.dump());
  EXPECT_FALSE(r.ok()) << j.dump();
  if (r) return "accepted";
  EXPECT_EQ(r.error().kind, ErrorKind::protocol);
  EXPECT_FALSE(r.error().detail.empty());
  return r.error().step;
}

TEST(DoneCodec, RoundTripOfALeakyHalf) {
  auto back = decode_done(encode_done(leaky()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, leaky());
}

TEST(DoneCodec, RoundTripOfACleanHalf) {
  auto back = decode_done(encode_done(clean()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, clean());
}

TEST(DoneCodec, CleanHygieneHasOnlyItsCounts) {
  EXPECT_EQ(hygiene_json(clean().hygiene), (json{{"clean", true}, {"fds", 8}, {"pid", 77}}));
}

TEST(DoneCodec, LeakyHygieneListsWhatChanged) {
  const json h = hygiene_json(leaky().hygiene);
  EXPECT_EQ(h["clean"], false);
  EXPECT_EQ(h["left_open"], json::array({"17 -> /memfd:extmem (deleted)"}));
  EXPECT_EQ(h["live_delta"], (json{{"vk_memories", 1}, {"gl_shared_buffers", -2}}));
  EXPECT_EQ(h["overlapped_warm_up"], true);
}

TEST(DoneCodec, RefusesWhatIsNotAJsonObject) {
  for (std::string bad : {"", "{", "[]", "0"}) {
    auto r = decode_done(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().step, "done");
  }
}

TEST(DoneCodec, RefusesMissingMistypedAndOutOfRangeFields) {
  json good = json::parse(encode_done(leaky()));
  auto with = [&](const json::json_pointer& at, const json& v) {
    json j = good;
    j[at] = v;
    return j;
  };
  auto without = [&](const json::json_pointer& at) {
    json j = good;
    j[at.parent_pointer()].erase(at.back());
    return j;
  };
  EXPECT_EQ(refused_field(without(json::json_pointer("/exit_code"))), "done.exit_code");
  EXPECT_EQ(refused_field(with(json::json_pointer("/exit_code"), 256)), "done.exit_code");
  EXPECT_EQ(refused_field(with(json::json_pointer("/exit_code"), -1)), "done.exit_code");
  EXPECT_EQ(refused_field(with(json::json_pointer("/exit_code"), "0")), "done.exit_code");
  EXPECT_EQ(refused_field(without(json::json_pointer("/hygiene"))), "done.hygiene");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene"), 3)), "done.hygiene");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/pid"), 0)), "done.hygiene.pid");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/fds"), -3)), "done.hygiene.fds");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/clean"), "no")), "done.hygiene.clean");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/left_open"), json::array({1}))), "done.hygiene.left_open");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/closed"), std::vector<std::string>(4097, "x"))),
            "done.hygiene.closed");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/live_delta"), json{{"threads", 1}})), "done.hygiene.live_delta");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/live_delta"), json{{"vk_buffers", 0.5}})),
            "done.hygiene.live_delta");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/overlapped_warm_up"), false)), "done.hygiene.overlapped_warm_up");
  EXPECT_EQ(refused_field(with(json::json_pointer("/hygiene/colour"), 1)), "done.hygiene");
  EXPECT_EQ(refused_field(with(json::json_pointer("/colour"), 1)), "done");
}

TEST(DoneCodec, RefusesACleanFlagThatContradictsTheLists) {
  json j = json::parse(encode_done(leaky()));
  j["hygiene"]["clean"] = true;
  EXPECT_EQ(refused_field(j), "done.hygiene.left_open");
  json k = json::parse(encode_done(clean()));
  k["hygiene"]["clean"] = false;
  k["hygiene"]["left_open"] = json::array();
  k["hygiene"]["closed"] = json::array();
  k["hygiene"]["live_delta"] = json::object();
  EXPECT_EQ(refused_field(k), "done.hygiene.clean");
}

}  // namespace
