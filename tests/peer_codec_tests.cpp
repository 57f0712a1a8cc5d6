// Tests of the peer messages (src/probe/worker/peer_codec.h): every shared
// request and reply survives the round trip; the decoders refuse what is not
// exactly a message of the protocol, naming the field, never throwing (a
// message crosses a socket from a process that may be a different build).
#include "probe/worker/peer_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace {

using extmem::ErrorKind;
using extmem::probe::Region;
namespace peer = extmem::probe::peer;
using nlohmann::json;

TEST(PeerCodec, EverySharedRequestRoundTrips) {
  const std::vector<peer::Request> all = {
      peer::Check{Region::C, std::nullopt}, peer::Check{Region::A, 0xfedcba9876543210ull},
      peer::Write{Region::F, 7},            peer::Write{Region::B, std::nullopt},
      peer::Count{Region::E, 42},           peer::Read{1u << 30, 4096},
      peer::Stamp{1ull << 33, 99},          peer::Unstamp{},
      peer::Missing{65536, 5},              peer::Done{},
      peer::Fill{1u << 21, 4096, 11},
      peer::RouteOp{"handover", json{{"op", "handover"}, {"kind", "opaque"}, {"n", 3}}}};
  for (const auto& r : all) {
    const std::string wire = peer::encode(r);
    auto back = peer::decode_request(wire);
    ASSERT_TRUE(back) << wire << ": " << back.error().message();
    EXPECT_EQ(*back, r) << wire;
    EXPECT_EQ(json::parse(wire).at("op"), peer::op_of(r));
  }
}

TEST(PeerCodec, EveryReplyRoundTrips) {
  for (const peer::CheckReply& c : {peer::CheckReply{true, std::nullopt, std::nullopt}, peer::CheckReply{false, 12, 8192}}) {
    auto back = peer::decode_reply<peer::CheckReply>(peer::encode(c));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, c);
  }
  auto n = peer::decode_reply<peer::CountReply>(peer::encode(peer::CountReply{1024}));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->stale, 1024u);
  for (const peer::MissingReply& m : {peer::MissingReply{}, peer::MissingReply{1ull << 40}}) {
    auto back = peer::decode_reply<peer::MissingReply>(peer::encode(m));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, m);
  }
  EXPECT_TRUE(peer::decode_reply<peer::Ack>(peer::encode(peer::Ack{})));
}

TEST(PeerCodec, RefusalIsAnErrorWithThePeersReason) {
  auto r = peer::decode_reply<peer::CheckReply>(peer::encode(peer::ErrorReply{"no such region"}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::protocol);
  EXPECT_EQ(r.error().detail, "peer: no such region");
  auto route = peer::decode_route_reply(peer::encode(peer::ErrorReply{"unknown op \"x\""}));
  ASSERT_FALSE(route);
  EXPECT_EQ(route.error().detail, "peer: unknown op \"x\"");
}

// Each malformed request: refused as protocol, the step naming the field.
TEST(PeerCodec, MalformedRequestsNameTheField) {
  struct Case {
    std::string payload, step, detail_has;
  };
  const std::vector<Case> cases = {
      {"", "peer request", "not JSON"},
      {"[1,2]", "peer request", "found an array"},
      {R"({"region":1})", "peer request.op", "missing"},
      {R"({"op":""})", "peer request.op", "printable"},
      {R"({"op":"check"})", "peer request.region", "missing"},
      {R"({"op":"check","region":6})", "peer request.region", "6 is not accepted"},
      {R"({"op":"check","region":-1})", "peer request.region", "negative"},
      {R"({"op":"write","region":"A"})", "peer request.region", "found a string"},
      {R"({"op":"check","region":1,"seed":1.5})", "peer request.seed", "found a fraction"},
      {R"({"op":"count","region":1})", "peer request.seed", "missing"},
      {R"({"op":"stamp","size":4096})", "peer request.seed", "missing"},
      {R"({"op":"missing","seed":1})", "peer request.size", "missing"},
      {R"({"op":"read","offset":0})", "peer request.length", "missing"},
      {R"({"op":"done","extra":1})", "peer request", "unknown field \"extra\""},
      {R"({"op":"check","region":1,"sead":1})", "peer request", "unknown field \"sead\""},
  };
  for (const Case& c : cases) {
    auto r = peer::decode_request(c.payload);
    ASSERT_FALSE(r) << c.payload;
    EXPECT_EQ(r.error().kind, ErrorKind::protocol) << c.payload;
    EXPECT_EQ(r.error().step, c.step) << c.payload << ": " << r.error().message();
    EXPECT_NE(r.error().detail.find(c.detail_has), std::string::npos) << c.payload << ": " << r.error().message();
  }
  EXPECT_FALSE(peer::decode_request(std::string(peer::kMaxMessageBytes + 1, ' ')));
}

TEST(PeerCodec, MalformedRepliesAreRefused) {
  EXPECT_FALSE(peer::decode_reply<peer::CheckReply>(R"({"match":true})"));  // the offsets are always sent
  EXPECT_FALSE(peer::decode_reply<peer::CheckReply>(R"({"match":1,"mismatch_at":null,"payload_at":null})"));
  EXPECT_FALSE(peer::decode_reply<peer::CountReply>(R"({"stale":-3})"));
  EXPECT_FALSE(peer::decode_reply<peer::MissingReply>(R"({})"));
  EXPECT_FALSE(peer::decode_reply<peer::Ack>(R"({"match":true})"));
  EXPECT_FALSE(peer::decode_reply<peer::Ack>(R"({"error":5})"));
  EXPECT_FALSE(peer::decode_route_reply("3"));
}

TEST(PeerCodec, SetupRoundTripsAndAFailureAlwaysHasAReason) {
  peer::SetupInfo info{.allocation_size = 65536, .dedicated = true};
  auto ok = peer::decode_setup(peer::encode(peer::Setup{peer::SetupOk{info}}));
  ASSERT_TRUE(ok);
  EXPECT_EQ(std::get<peer::SetupOk>(*ok).info, info);

  extmem::RouteFacts f;
  f.unsupported = "VK_ERROR_INVALID_EXTERNAL_HANDLE";
  f.stop_kind = ErrorKind::unsupported;
  auto failed = peer::decode_setup(peer::encode(peer::Setup{peer::SetupFailed{f}}));
  ASSERT_TRUE(failed);
  const auto& facts = std::get<peer::SetupFailed>(*failed).facts;
  EXPECT_EQ(facts.unsupported, f.unsupported);
  EXPECT_EQ(facts.stop_kind, ErrorKind::unsupported);
  EXPECT_FALSE(facts.fatal);

  auto bare = peer::decode_setup(R"({"ok":false,"unsupported":null,"fatal":null,"skip":null,"stop_kind":null})");
  ASSERT_TRUE(bare);
  EXPECT_EQ(std::get<peer::SetupFailed>(*bare).facts.fatal, "peer setup failed without a reason");

  EXPECT_FALSE(peer::decode_setup(R"({"ok":true,"info":[]})"));
  EXPECT_FALSE(peer::decode_setup(R"({"ok":true,"info":{"size":65536}})"));
  EXPECT_FALSE(peer::decode_setup(R"({"ok":true})"));
  EXPECT_FALSE(peer::decode_setup(R"({"ok":false,"unsupported":null,"fatal":"x","skip":null,"stop_kind":"bogus"})"));
}

// Every family's part of the setup survives the round trip, field for field.
TEST(PeerCodec, SetupInfoOfEveryFamilyRoundTrips) {
  peer::SetupInfo vk{.allocation_size = 1179648, .memory_type_index = 7, .dedicated = false, .fd_size = 0,
                     .fd_target = "anon_inode:[memfd]", .exportable_advertised = true, .device_uuid = "ab01"};
  vk.measure = extmem::probe::Measurement{.size = 65536, .repeats = 5};
  vk.measure->route.export_us = extmem::probe::Figure{.median = 12.5, .min = 11, .max = 14, .n = 5};
  peer::SetupInfo image = vk;
  image.image = peer::ImageCreate{37, "R8G8B8A8_UNORM", 1024, 768, 1, "LINEAR", 3, 0, 1, 1, 1, "GENERAL", true, false};
  peer::SetupInfo ipc{.allocation_size = 4096, .device_uuid = "ab"};
  ipc.ipc = peer::IpcHandles{"00ff", std::nullopt, "cuIpcGetMemHandle -> CUDA_ERROR_INVALID_VALUE", 12288, 2097152, "ee"};
  peer::SetupInfo chunks{.granularity = 2097152};
  chunks.chunks = peer::ChunkList{{2097152, 4194304}, 6291456, {"/dev/nvidiactl", "/dev/nvidiactl"}};
  peer::SetupInfo seals;
  seals.seals = peer::Seals{15, "MFD_NOEXEC_SEAL accepted"};
  for (const auto& i : {vk, image, ipc, chunks, seals, peer::SetupInfo{}}) {
    auto back = peer::decode_setup_info(peer::to_json(i));
    ASSERT_TRUE(back) << back.error().step << ": " << back.error().detail;
    EXPECT_EQ(*back, i) << peer::to_json(i).dump();
  }
}

// A loose read took a default for a field of the wrong type; the strict one
// names the field, nested ones too, and refuses what no route sends.
TEST(PeerCodec, SetupInfoRefusesWhatNoRouteSendsNamingTheField) {
  struct Case {
    const char* info;
    const char* step;
  };
  const Case cases[] = {
      {R"({"allocation_size":"65536"})", "peer setup.info.allocation_size"},
      {R"({"allocation_size":-1})", "peer setup.info.allocation_size"},
      {R"({"memory_type_index":32})", "peer setup.info.memory_type_index"},
      {R"({"dedicated":1})", "peer setup.info.dedicated"},
      {R"({"size":65536})", "peer setup.info"},
      {R"({"image":{"format":37}})", "peer setup.info.image.format_name"},
      {R"({"image":[]})", "peer setup.info.image"},
      {R"({"ipc":{"mem_handle":"00","view_offset":0,"range_size":0,"event_handle":"e","extra":1}})", "peer setup.info.ipc"},
      {R"({"chunks":{"sizes":[],"total":0}})", "peer setup.info.chunks.sizes"},
      {R"({"chunks":{"sizes":[1,"2"],"total":3}})", "peer setup.info.chunks.sizes"},
      {R"({"seals":{"seals":4294967296,"noexec":"x"}})", "peer setup.info.seals.seals"},
      {R"({"measure":[1]})", "peer setup.info.measure"},
      {R"({"measure":{"route":{}}})", "peer setup.info.measure.size"},
      {R"({"measure":{"size":0,"repeats":1,"baseline":{},"legs":{},"route":{"export_us":{"n":1}}}})",
       "peer setup.info.measure.route.export_us.n"},
  };
  for (const Case& c : cases) {
    auto r = peer::decode_setup(std::string(R"({"ok":true,"info":)") + c.info + "}");
    ASSERT_FALSE(r) << c.info;
    EXPECT_EQ(r.error().kind, ErrorKind::protocol) << c.info;
    EXPECT_EQ(r.error().step, c.step) << c.info << " -> " << r.error().detail;
  }
  json many = json::array();
  for (int i = 0; i < 65; ++i) many.push_back(4096);
  auto r = peer::decode_setup_info(json{{"chunks", {{"sizes", many}, {"total", 65 * 4096}}}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().step, "peer setup.info.chunks.sizes");
}

}  // namespace

