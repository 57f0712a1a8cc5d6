#include "probe/routes/t4_image/measure.h"

#include <vector>

#include <fmt/format.h>

#include "probe/worker/measure.h"
#include "probe/worker/vk_gpu_clock.h"
#include "probe/routes/route_file.h"

namespace extmem::probe::image {
namespace {
namespace EXTMEM_ROUTE_FILE {

// The figure of each ImageCopy, by its value, and its key (which an error names).
struct Slot {
  const char* key;
  std::optional<Figure> ImageFigures::*figure;
};
constexpr Slot kSlot[kImageCopies] = {{"image_out_gbps", &ImageFigures::out_gbps},
                                      {"image_private_out_gbps", &ImageFigures::private_out_gbps},
                                      {"image_in_gbps", &ImageFigures::in_gbps},
                                      {"image_private_in_gbps", &ImageFigures::private_in_gbps}};

// Every copy's accesses against the copies recorded before it, in this and
// earlier submissions (a barrier's first scope reaches back in submission
// order), so no two copies overlap and none reads before the last write.
void transfer_barrier(const vk::Device& d, VkCommandBuffer cb) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  d.fn().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0, nullptr, 0,
                              nullptr);
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void log_extent(const std::string& leg, std::uint32_t w, std::uint32_t h) {
  LegFigures* m = measure::leg(leg);
  if (m == nullptr) return;
  m->image.extent = fmt::format("{}x{}", w, h);
  m->image.copy_bytes = std::uint64_t{w} * h * 4;  // 4 bytes a texel, rows tightly packed
}

void log_error(const std::string& leg, std::string what) {
  if (LegFigures* m = measure::leg(leg)) m->image.error = std::move(what);
}

void log_restored(const std::string& leg, const std::string& problems) {
  LegFigures* m = measure::leg(leg);
  if (m == nullptr) return;
  m->image.restored = problems.empty();
  if (!problems.empty()) m->image.restore_error = problems;
}

bool sample_copies(const std::string& leg, std::size_t bytes, const ImageCopyTimer& time) {
  if (!measure::enabled()) return true;
  LegFigures& m = *measure::leg(leg);
  // As measure::copy_leg does: a copy under 5 ms is repeated within a sample until the sample
  // lasts ~5 ms, so the timer's fixed cost stays small; calibrated on the device's own image.
  const auto one = time(ImageCopy::private_out, 1);
  const unsigned batch = one ? measure::copies_per_sample(one->seconds) : 1;
  m.image.copies_per_sample = batch;

  std::vector<double> samples[kImageCopies];
  const char* used[kImageCopies] = {};  // each figure's clock: the wall clock once any of its samples was on it
  for (unsigned i = 0; i < measure::repeats(); ++i) {
    for (int k = 0; k < kImageCopies; ++k) {
      auto t = time(static_cast<ImageCopy>(k), batch);
      if (!t) {
        m.image.error = std::string(kSlot[k].key) + ": " + measure::step_and_code(t.error());
        return false;
      }
      samples[k].push_back(measure::gbps(bytes * batch, t->seconds));
      if (used[k] != measure::clocks::wall) used[k] = t->clock;
    }
  }
  Figure f[kImageCopies];
  const char* overall = used[0];
  for (int k = 0; k < kImageCopies; ++k) {
    f[k] = measure::figure(samples[k]);
    f[k].clock = used[k] != nullptr ? used[k] : measure::clocks::wall;
    m.image.*kSlot[k].figure = f[k];
    if (used[k] == measure::clocks::wall) overall = used[k];
  }
  m.gpu.clock = overall != nullptr ? overall : measure::clocks::wall;
  auto ratio = [&](ImageCopy mine, ImageCopy base, std::optional<double>& into) {
    const double b = f[static_cast<int>(base)].median;
    if (b > 0) into = f[static_cast<int>(mine)].median / b;
  };
  ratio(ImageCopy::shared_out, ImageCopy::private_out, m.image.out_ratio);
  ratio(ImageCopy::shared_in, ImageCopy::private_in, m.image.in_ratio);
  return true;
}

void measure_copies(const std::string& leg, const vk::Device& d, const vk::Image& shared) {
  if (!measure::enabled()) return;
  const std::uint32_t w = shared.shape.width, h = shared.shape.height;
  const std::size_t bytes = std::size_t{w} * h * 4;  // R8G8B8A8: 4 bytes a texel, rows tightly packed
  if (bytes == 0) return;
  LegFigures& m = *measure::leg(leg);
  auto failed = [&](const std::string& what, const Error& e) { m.image.error = what + ": " + measure::step_and_code(e); };
  log_extent(leg, w, h);
  m.image.layout = "GENERAL";
  m.image.copy = "vkCmdCopyImageToBuffer/vkCmdCopyBufferToImage";
  m.image.memory_type = shared.memory_type_index;

  // Device-local partners: 0 keeps the shared image's texels meanwhile, 1 is
  // the other end of every timed copy.
  vk::AllocationRequest breq;
  breq.size = bytes;
  breq.map = false;
  if (const int dl = measure::device_local_memory_type(d); dl >= 0) breq.allowed_type_bits = 1u << dl;
  std::vector<vk::Buffer> buf;
  for (int i = 0; i < 2; ++i) {
    auto b = d.create_buffer(breq);
    if (!b) return failed("partner buffer", b.error());
    buf.push_back(std::move(*b));
  }
  m.image.partner_memory_type = buf[1].memory_type_index;

  // The baseline: the same create info, not external, in its own device-local memory.
  vk::ImageRequest preq;
  preq.shape = shared.shape;
  // When no DEVICE_LOCAL type takes this image: any type it takes, as the field says.
  preq.preferred_flags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  auto priv = vk::create_image(d, preq);
  if (!priv) return failed("private image", priv.error());
  m.image.private_memory_type = priv->memory_type_index;

  measure::VkGpuClock clock(d);
  if (clock.timestamps())
    m.gpu_timestamp = GpuTimestamp{d.timestamp_period(), clock.valid_bits()};
  else
    m.gpu_clock_fallback = clock.fallback();

  auto record = [&](ImageCopy k, VkCommandBuffer cb) {
    const vk::Image& img = k == ImageCopy::shared_out || k == ImageCopy::shared_in ? shared : *priv;
    if (k == ImageCopy::shared_out || k == ImageCopy::private_out)
      vk::record_copy_to_buffer(d, cb, img, VK_IMAGE_LAYOUT_GENERAL, buf[1].buffer);
    else
      vk::record_copy_from_buffer(d, cb, buf[1].buffer, img, VK_IMAGE_LAYOUT_GENERAL, 0, 0, w, h);
  };
  auto timed = [&](ImageCopy k, unsigned copies) {
    return clock.time([&](VkCommandBuffer cb) {
      for (unsigned c = 0; c < copies; ++c) {
        transfer_barrier(d, cb);
        record(k, cb);
      }
    });
  };

  // Save the shared texels; the private image leaves UNDEFINED for GENERAL (its content is
  // never looked at, so discarding it is fine).
  auto saved = d.submit_and_wait([&](VkCommandBuffer cb) {
    transfer_barrier(d, cb);
    vk::record_copy_to_buffer(d, cb, shared, VK_IMAGE_LAYOUT_GENERAL, buf[0].buffer);
    vk::record_image_barrier(d, cb, *priv, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL, VK_QUEUE_FAMILY_IGNORED,
                             VK_QUEUE_FAMILY_IGNORED, 0, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                             VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
  });
  if (!saved) return failed("save the shared image", saved.error());

  (void)sample_copies(leg, bytes, [&](ImageCopy k, unsigned copies) { return timed(k, copies); });

  // Put the shared texels back (the in-copies overwrote them), whatever happened above.
  auto restored = d.submit_and_wait([&](VkCommandBuffer cb) {
    transfer_barrier(d, cb);
    vk::record_copy_from_buffer(d, cb, buf[0].buffer, shared, VK_IMAGE_LAYOUT_GENERAL, 0, 0, w, h);
    transfer_barrier(d, cb);
  });
  if (!restored) failed("restore the shared image", restored.error());
}

}  // namespace extmem::probe::image
