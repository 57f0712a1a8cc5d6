// Tests of the cross-API handover requests (src/probe/routes/cuda/handover_codec.h):
// each survives the round trip; the decoder refuses what is not exactly one of
// them, naming the field; the exporter's refusal comes back to the importer as
// its Error, unsupported only when the capability was not offered.
#include "probe/routes/cuda/handover_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using extmem::Error;
using extmem::ErrorKind;
namespace handover = extmem::probe::handover;
namespace s1 = extmem::probe::s1;

TEST(HandoverCodec, EveryRequestRoundTrips) {
  const std::vector<handover::Request> all = {handover::Export{}, handover::Signal{1}, handover::Wait{UINT64_MAX}};
  for (const auto& r : all) {
    const std::string wire = handover::body(r).dump();
    auto back = handover::decode_request(wire);
    ASSERT_TRUE(back) << wire << ": " << back.error().message();
    EXPECT_EQ(*back, r) << wire;
    EXPECT_TRUE(handover::is_handover_op(handover::op_of(r)));
  }
  EXPECT_FALSE(handover::is_handover_op("hold"));
}

TEST(HandoverCodec, RefusesWhatIsNotARequestNamingTheField) {
  struct Case {
    const char* payload;
    const char* step;
  };
  const Case cases[] = {
      {R"({"op":"handover-signal"})", "handover request.value"},
      {R"({"op":"handover-wait","value":-1})", "handover request.value"},
      {R"({"op":"handover-wait","value":"3"})", "handover request.value"},
      {R"({"op":"handover-export","value":3})", "handover request"},
      {R"({"op":"handover-bogus"})", "handover request.op"},
      {R"([1])", "handover request"},
      {R"({"op":""})", "handover request.op"},
  };
  for (const Case& c : cases) {
    auto r = handover::decode_request(c.payload);
    ASSERT_FALSE(r) << c.payload;
    EXPECT_EQ(r.error().kind, ErrorKind::protocol) << c.payload;
    EXPECT_EQ(r.error().step, c.step) << c.payload << " -> " << r.error().detail;
  }
}

// What the importer's leg records: the exporter's step and driver code, and a
// kind it can branch on (unsupported only for a capability not offered).
TEST(HandoverCodec, ExportersRefusalReachesTheImporterAsItsError) {
  const Error not_offered{"handover semaphore", ErrorKind::unsupported, {}, "OPAQUE_FD timelines not exportable"};
  auto a = s1::decode_reply<s1::Ok>(s1::encode(s1::refusal_of(not_offered)));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().kind, ErrorKind::unsupported);
  EXPECT_EQ(a.error().step, "handover semaphore");
  EXPECT_EQ(a.error().detail, "server: OPAQUE_FD timelines not exportable");

  const Error lost{"handover: wait for the importer + acquire", ErrorKind::driver, "VK_ERROR_DEVICE_LOST", "fence"};
  auto b = s1::decode_reply<s1::Ok>(s1::encode(s1::refusal_of(lost)));
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().kind, ErrorKind::driver);
  EXPECT_EQ(b.error().code, "VK_ERROR_DEVICE_LOST");
  EXPECT_TRUE(s1::decode_reply<s1::Ok>(s1::encode(s1::Ok{})));
}

}  // namespace
