// Tests of the T4 image rows' conversation (src/probe/routes/t4_image/codec.h):
// every request and reply survives the round trip; the decoders refuse what
// is not exactly a message, naming the field, where the owner once threw on a
// rectangle that was not four numbers; the owner's refusal keeps its kind.
#include "probe/routes/t4_image/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using extmem::ErrorKind;
namespace image = extmem::probe::image;

TEST(ImageCodec, EveryRequestRoundTrips) {
  image::Expected plain{7, std::nullopt, 0, std::nullopt, std::nullopt};
  image::Expected vulkan{7, image::Rect{1, 2, 30, 40}, 9, std::nullopt, std::nullopt};
  image::Expected cleared{7, image::Rect{0, 0, 1, 1}, 0, 0xff00ff00u, std::nullopt};
  image::Expected gl{7, image::Rect{5, 5, 5, 5}, 0, std::nullopt, 3};
  const std::vector<image::Request> all = {image::SemaphoresRequest{1000164003}, image::SemaphoreGlRequest{},
                                           image::CheckRequest{plain},         image::CheckRequest{vulkan},
                                           image::CheckRequest{cleared},       image::CheckRequest{gl},
                                           image::FillRequest{0xffffffffffffffffull}, image::DoneRequest{}};
  for (const auto& r : all) {
    const std::string wire = image::encode(r);
    auto back = image::decode_request(wire);
    ASSERT_TRUE(back) << wire << ": " << back.error().message();
    EXPECT_TRUE(*back == r) << wire;
  }
}

TEST(ImageCodec, RepliesRoundTripAndRefusalsKeepTheirKind) {
  image::Compare c;
  c.texels = 4096;
  c.mismatches = 2;
  c.rect_mismatches = 1;
  c.first = image::Compare::Texel{1, 2, 0xdeadbeef, 0x12345678};
  c.shape = "unrelated to the pattern";
  auto back = image::decode_reply<image::Compare>(image::encode(c));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(image::encode(*back), image::encode(c));
  EXPECT_TRUE(image::decode_reply<image::Ok>(image::encode(image::Ok{})));

  const extmem::Error unsupported{"vkGetSemaphoreFdKHR", ErrorKind::unsupported, "VK_ERROR_FEATURE_NOT_PRESENT", "no export"};
  auto u = image::decode_reply<image::Ok>(image::encode(image::refusal_of(unsupported)));
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().kind, ErrorKind::unsupported);
  EXPECT_EQ(u.error().step, "owner");
  auto p = image::decode_reply<image::Compare>(image::encode(image::Refusal{"readback failed"}));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::protocol);
  EXPECT_EQ(p.error().detail, "owner: readback failed");
}

TEST(ImageCodec, RefusesWhatIsNotExactlyAMessage) {
  struct Case {
    std::string payload, step;
  };
  const std::vector<Case> cases = {
      {"{\"op\":\"image-check\",\"base_seed\":1,\"rect_seed\":2,\"rect\":[1,2,\"x\",4]}", "image request.rect"},
      {"{\"op\":\"image-check\",\"base_seed\":1,\"rect_seed\":2,\"rect\":[1,2,3]}", "image request.rect"},
      {"{\"op\":\"image-check\",\"base_seed\":1,\"rect_seed\":2,\"rect\":[1,2,3,4294967296]}", "image request.rect"},
      {"{\"op\":\"image-check\",\"base_seed\":1,\"rect_seed\":2,\"rect\":null,\"rect_constant\":1,\"rect_gl_seed\":2}",
       "image request.rect_gl_seed"},
      {"{\"op\":\"image-check\",\"rect_seed\":2,\"rect\":null}", "image request.base_seed"},
      {"{\"op\":\"image-semaphores\",\"gl_layout\":-1}", "image request.gl_layout"},
      {"{\"op\":\"image-fill\",\"seed\":1,\"more\":2}", "image request"},
      {"{\"op\":\"image-paint\"}", "image request.op"},
      {"\"image-fill\"", "image request"},
  };
  for (const auto& c : cases) {
    auto r = image::decode_request(c.payload);
    ASSERT_FALSE(r) << c.payload;
    EXPECT_EQ(r.error().kind, ErrorKind::protocol) << c.payload;
    EXPECT_EQ(r.error().step, c.step) << c.payload << ": " << r.error().message();
  }
  EXPECT_EQ(image::decode_reply<image::Compare>("{\"texels\":1,\"mismatches\":2,\"rect_mismatches\":0,\"shape\":\"\"}")
                .error()
                .step,
            "image reply.mismatches");
  EXPECT_EQ(image::decode_reply<image::Ok>("{\"error\":\"x\",\"unsupported\":false}").error().step, "image reply.unsupported");
}

}  // namespace
