// Tests of the S1 producer conversation (src/probe/routes/s1/codec.h): every
// request and reply survives the round trip; the decoders refuse what is not
// exactly a message of the conversation, naming the field; a producer's
// refusal comes back as its Error (unsupported or driver, "server: ...").
#include "probe/routes/s1/codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

using extmem::ErrorKind;
namespace s1 = extmem::probe::s1;
using nlohmann::json;

TEST(S1Codec, EveryRequestRoundTrips) {
  const std::vector<s1::Request> all = {
      s1::Hold{"binary-opaque", true, false}, s1::Hold{"timeline-opaque", true, true}, s1::Hold{"binary-opaque", false, false},
      s1::Release{}, s1::Ping{}, s1::PingGpu{}, s1::Drain{}, s1::WaitExport{"timeline-opaque"}, s1::WaitArm{},
      s1::WaitUngated{5000}, s1::WaitObserve{}, s1::WaitWait{0}, s1::WaitCheck{}, s1::Done{}};
  for (const auto& r : all) {
    const std::string wire = s1::encode(r);
    auto back = s1::decode_request(wire);
    ASSERT_TRUE(back) << wire << ": " << back.error().message();
    EXPECT_EQ(*back, r) << wire;
    EXPECT_EQ(json::parse(wire).at("op"), s1::op_of(r));
  }
}

template <class Reply>
void round_trip(const Reply& r) {
  const std::string wire = s1::encode(r);
  auto back = s1::decode_reply<Reply>(wire);
  ASSERT_TRUE(back) << wire << ": " << back.error().message();
  EXPECT_EQ(*back, r) << wire;
}

TEST(S1Codec, EveryReplyRoundTrips) {
  round_trip(s1::Ok{});
  round_trip(s1::Released{1234.5});
  round_trip(s1::Pong{0.25});
  round_trip(s1::PingGpuReply{7.0, s1::GpuEnd{6.5, 120, std::nullopt}});
  round_trip(s1::PingGpuReply{std::nullopt, s1::GpuEnd{std::nullopt, 0, "no timestamps on this queue"}});
  round_trip(s1::Drained{true, s1::GpuEnd{}});
  round_trip(s1::Drained{false, s1::GpuEnd{3.0, 0, std::nullopt}});
  round_trip(s1::WaitReply{true, "VK_SUCCESS"});
  round_trip(s1::ObserveReply{true, false, 1});
  round_trip(s1::ObserveReply{false, true, std::nullopt});
  round_trip(s1::CheckReply{0, 1024, std::nullopt});
  round_trip(s1::CheckReply{3, 1024, 8});
}

TEST(S1Codec, ARefusalIsTheProducersError) {
  const extmem::Error e{"vkGetSemaphoreFdKHR(OPAQUE_FD)", ErrorKind::unsupported, "VK_ERROR_INVALID_EXTERNAL_HANDLE",
                        "not exportable"};
  auto r = s1::decode_reply<s1::Ok>(s1::encode(s1::refusal_of(e)));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::unsupported);
  EXPECT_EQ(r.error().step, e.step);
  EXPECT_EQ(r.error().code, e.code);
  EXPECT_EQ(r.error().detail, "server: not exportable");
  const extmem::Error timeout{"hold", ErrorKind::timeout, {}, "the previous round did not drain"};
  auto d = s1::decode_reply<s1::Drained>(s1::encode(s1::refusal_of(timeout)));
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().kind, ErrorKind::driver);  // only "unsupported" crosses as a kind
}

TEST(S1Codec, RefusesWhatIsNotExactlyAMessage) {
  struct Case {
    std::string payload, step;
  };
  const std::vector<Case> requests = {
      {"[]", "s1 request"},
      {"{\"op\":\"hold\",\"kind\":\"binary-opaque\",\"write\":true}", "s1 request.time"},
      {"{\"op\":\"hold\",\"kind\":\"\",\"write\":true,\"time\":false}", "s1 request.kind"},
      {"{\"op\":\"hold\",\"kind\":\"binary opaque\",\"write\":true,\"time\":false}", "s1 request.kind"},
      {"{\"op\":\"wait-wait\",\"ms\":5001}", "s1 request.ms"},
      {"{\"op\":\"wait-wait\",\"ms\":-1}", "s1 request.ms"},
      {"{\"op\":\"drain\",\"extra\":1}", "s1 request"},
      {"{\"op\":\"fill\"}", "s1 request.op"},
      {"{\"op\":7}", "s1 request.op"},
      {"{}", "s1 request.op"},
      {std::string(5000, ' '), "s1 request"},
  };
  for (const auto& c : requests) {
    auto r = s1::decode_request(c.payload);
    ASSERT_FALSE(r) << c.payload;
    EXPECT_EQ(r.error().kind, ErrorKind::protocol) << c.payload;
    EXPECT_EQ(r.error().step, c.step) << c.payload << ": " << r.error().message();
  }
  EXPECT_EQ(s1::decode_reply<s1::Ok>("{\"ok\":false}").error().step, "s1 reply.ok");
  EXPECT_EQ(s1::decode_reply<s1::Pong>("{\"t\":\"soon\"}").error().step, "s1 reply.t");
  EXPECT_EQ(s1::decode_reply<s1::Drained>("{\"drained\":true,\"gpu_t\":1}").error().step, "s1 reply.max_deviation_ns");
  EXPECT_EQ(s1::decode_reply<s1::Drained>("{\"drained\":true,\"gpu_t\":1,\"max_deviation_ns\":0,\"gpu_error\":\"x\"}")
                .error()
                .step,
            "s1 reply");
  EXPECT_EQ(s1::decode_reply<s1::Ok>("{\"error\":\"x\",\"step\":\"s\"}").error().step, "s1 reply.code");
  EXPECT_EQ(s1::decode_reply<s1::CheckReply>("{\"mismatched\":1,\"words\":2,\"first\":-3}").error().step, "s1 reply.first");
}

}  // namespace
