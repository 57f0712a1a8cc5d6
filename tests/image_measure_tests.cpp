// image::sample_copies (src/probe/routes/t4_image/measure.h), the sampling the
// Vulkan and CUDA image rows share, with a fake timer: no GPU needed.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/routes/t4_image/measure.h"
#include "probe/measure_codec.h"
#include "probe/worker/measure.h"

namespace {

using extmem::Error;
using extmem::ErrorKind;
using extmem::Result;
using extmem::probe::image::ImageCopy;
using nlohmann::json;
namespace image = extmem::probe::image;
namespace measure = extmem::probe::measure;

// measure's log is process-wide: on for one test, off (and empty) after it.
struct Measuring {
  explicit Measuring(unsigned repeats) { measure::enable(repeats); }
  ~Measuring() { measure::disable(); }
  json leg(const std::string& name) const { return extmem::probe::to_json(*measure::collected())["legs"][name]; }
};

// Each copy of a kind takes a fixed time; records what it was asked; may fail one kind.
struct FakeTimer {
  std::map<ImageCopy, double> per_copy{{ImageCopy::shared_out, 0.02},
                                       {ImageCopy::private_out, 0.01},
                                       {ImageCopy::shared_in, 0.04},
                                       {ImageCopy::private_in, 0.01}};
  std::optional<ImageCopy> fails;
  std::vector<std::pair<ImageCopy, unsigned>> calls;
  image::ImageCopyTimer fn() {
    return [this](ImageCopy k, unsigned n) -> Result<measure::Timed> {
      calls.emplace_back(k, n);
      if (fails == k) return Error{"cuMemcpy2DAsync(linear -> array)", ErrorKind::driver, "CUDA_ERROR_ILLEGAL_ADDRESS", {}};
      return measure::Timed{per_copy[k] * n, measure::clocks::cuda_event};
    };
  }
};

// Slow copies: one a sample, the four kinds alternate in ImageCopy order, ratios are shared / private.
TEST(ImageSampleCopies, FiguresRatiosAndOrderFromTheTimer) {
  Measuring m(3);
  FakeTimer t;
  EXPECT_TRUE(image::sample_copies("cudaimage", 1'000'000, t.fn()));
  json e = m.leg("cudaimage");
  EXPECT_EQ(e["image_copies_per_sample"], 1) << e.dump();  // 10 ms a copy: no batching
  EXPECT_DOUBLE_EQ(e["image_out_gbps"]["median"].get<double>(), 0.05);  // 1e6 bytes in 20 ms
  EXPECT_DOUBLE_EQ(e["image_private_out_gbps"]["median"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(e["image_in_gbps"]["median"].get<double>(), 0.025);
  EXPECT_DOUBLE_EQ(e["image_private_in_gbps"]["median"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(e["image_out_ratio"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(e["image_in_ratio"].get<double>(), 0.25);
  EXPECT_EQ(e["image_out_gbps"]["n"], 3);
  for (const char* key : {"image_out_gbps", "image_private_out_gbps", "image_in_gbps", "image_private_in_gbps"})
    EXPECT_EQ(e[key]["clock"], "cuda-event") << key;
  EXPECT_EQ(e["gpu_clock"], "cuda-event");
  EXPECT_FALSE(e.contains("image_error"));
  ASSERT_EQ(t.calls.size(), 1u + 3u * 4u);
  EXPECT_EQ(t.calls[0], std::make_pair(ImageCopy::private_out, 1u)) << "calibrated on the private copy out";
  const ImageCopy order[] = {ImageCopy::shared_out, ImageCopy::private_out, ImageCopy::shared_in, ImageCopy::private_in};
  for (std::size_t i = 1; i < t.calls.size(); ++i) EXPECT_EQ(t.calls[i].first, order[(i - 1) % 4]) << i;
}

// A private copy under 5 ms makes the sample that many copies, and the bandwidth counts them all.
TEST(ImageSampleCopies, FastCopiesAreBatched) {
  Measuring m(2);
  FakeTimer t;
  t.per_copy = {{ImageCopy::shared_out, 1e-3}, {ImageCopy::private_out, 1e-3}, {ImageCopy::shared_in, 2e-3},
                {ImageCopy::private_in, 1e-3}};
  EXPECT_TRUE(image::sample_copies("cudaimage", 1'000'000, t.fn()));
  json e = m.leg("cudaimage");
  EXPECT_EQ(e["image_copies_per_sample"], 5) << e.dump();  // 5 ms / 1 ms
  EXPECT_EQ(t.calls[1], std::make_pair(ImageCopy::shared_out, 5u));
  EXPECT_DOUBLE_EQ(e["image_out_gbps"]["median"].get<double>(), 1.0);  // 5e6 bytes in 5 ms
  EXPECT_DOUBLE_EQ(e["image_in_gbps"]["median"].get<double>(), 0.5);
}

// A very fast copy is capped at measure::kMaxCopiesPerSample a sample.
TEST(ImageSampleCopies, BatchIsCappedAt256) {
  Measuring m(1);
  FakeTimer t;
  t.per_copy = {{ImageCopy::shared_out, 1e-7}, {ImageCopy::private_out, 1e-7}, {ImageCopy::shared_in, 1e-7},
                {ImageCopy::private_in, 1e-7}};
  EXPECT_TRUE(image::sample_copies("cudaimage", 4096, t.fn()));
  EXPECT_EQ(m.leg("cudaimage")["image_copies_per_sample"], measure::kMaxCopiesPerSample);
  EXPECT_EQ(t.calls.back().second, measure::kMaxCopiesPerSample);
}

// The first failing sample is image_error with the driver's name verbatim, and no figure is logged.
TEST(ImageSampleCopies, AFailingSampleIsImageErrorAndNoFigures) {
  Measuring m(3);
  FakeTimer t;
  t.fails = ImageCopy::shared_in;
  EXPECT_FALSE(image::sample_copies("cudaimage", 4096, t.fn()));
  json e = m.leg("cudaimage");
  EXPECT_EQ(e["image_error"], "image_in_gbps: cuMemcpy2DAsync(linear -> array) -> CUDA_ERROR_ILLEGAL_ADDRESS");
  for (const char* key : {"image_out_gbps", "image_private_out_gbps", "image_in_gbps", "image_private_in_gbps",
                          "image_out_ratio", "image_in_ratio", "gpu_clock"})
    EXPECT_FALSE(e.contains(key)) << key << " " << e.dump();
  EXPECT_EQ(t.calls.size(), 1u + 3u) << "stops at the first failure";
}

// A failed calibration is not an error: one copy a sample, and the samples say the rest.
TEST(ImageSampleCopies, AFailedCalibrationLeavesOneCopyASample) {
  Measuring m(1);
  FakeTimer t;
  t.fails = ImageCopy::private_out;
  EXPECT_FALSE(image::sample_copies("cudaimage", 4096, t.fn()));
  json e = m.leg("cudaimage");
  EXPECT_EQ(e["image_copies_per_sample"], 1);
  EXPECT_EQ(e["image_error"], "image_private_out_gbps: cuMemcpy2DAsync(linear -> array) -> CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST(ImageSampleCopies, NothingWhenNotMeasuring) {
  FakeTimer t;
  EXPECT_TRUE(image::sample_copies("cudaimage", 4096, t.fn()));
  image::log_extent("cudaimage", 4, 4);
  EXPECT_TRUE(t.calls.empty());
  EXPECT_FALSE(measure::collected().has_value());
}

TEST(ImageSampleCopies, ExtentAndBytes) {
  Measuring m(1);
  image::log_extent("cudaimage", 96, 40);
  json e = m.leg("cudaimage");
  EXPECT_EQ(e["image_extent"], "96x40");
  EXPECT_EQ(e["image_copy_bytes"], 96u * 40u * 4u);
}

}  // namespace
