// --measure for the T4 image rows: GPU copy throughput through a shared
// (imported) image against a private image of the same create info on the
// same device. docs/probe.md, "T4 image rows" and the --measure description in
// docs/probe-options.md, "Bandwidth, latency and memory types".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "extmem/core/error.h"
#include "probe/worker/measure.h"
#include "vulkan/context.h"
#include "vulkan/image.h"

namespace extmem::probe::image {

/// The four timed copies of an image leg, each of the whole image; the order
/// is also the order they alternate in within a round.
enum class ImageCopy : int {
  shared_out,   ///< the shared (imported) image -> the linear partner: image_out_gbps
  private_out,  ///< the private image -> the linear partner: image_private_out_gbps, and the calibration
  shared_in,    ///< the linear partner -> the shared image: image_in_gbps
  private_in,   ///< the linear partner -> the private image: image_private_in_gbps
};
inline constexpr int kImageCopies = 4;

/// Times `copies` (1..measure::kMaxCopiesPerSample) back-to-back,
/// non-overlapping copies of kind ImageCopy: the seconds they took on the clock
/// it names, or the failing call's Error (step and driver code).
using ImageCopyTimer = std::function<Result<measure::Timed>(ImageCopy, unsigned copies)>;

/// Logs leg `leg`'s image_extent ("WxH") and image_copy_bytes (w x h x 4).
/// Does nothing unless measure::enabled().
void log_extent(const std::string& leg, std::uint32_t width, std::uint32_t height);
/// Logs leg `leg`'s image_error. Does nothing unless measure::enabled().
void log_error(const std::string& leg, std::string what);
/// Logs leg `leg`'s image_restored (whether `problems` is empty: the image's
/// content came back as it was and its owner checked it) and, when not,
/// image_restore_error = `problems`. Does nothing unless measure::enabled().
void log_restored(const std::string& leg, const std::string& problems);

/// The sampling both APIs share (Vulkan here, CUDA in t4_image/cuda_measure.h):
/// one ImageCopy::private_out to calibrate (a copy under 5 ms makes a sample
/// that many copies, at most measure::kMaxCopiesPerSample:
/// image_copies_per_sample), then measure::repeats() rounds of the four kinds
/// in ImageCopy order, logged as image_out_gbps, image_private_out_gbps,
/// image_in_gbps, image_private_in_gbps (GB/s of `bytes` a copy, each figure
/// with its samples' "clock"), gpu_clock, and the ratios image_out_ratio /
/// image_in_ratio (shared median / private median, where the private one is
/// above 0). A failed calibration leaves one copy a sample. The first failing
/// sample is logged as image_error ("<key>: <step> -> <code>"), ends the
/// sampling and no figure is logged; returns false then, true otherwise.
/// Saving and restoring the shared image are the caller's. Does nothing
/// (and returns true) unless measure::enabled().
bool sample_copies(const std::string& leg, std::size_t bytes, const ImageCopyTimer& time);

/// Logs leg `leg`'s image copy figures (measure.h's log; nothing unless
/// measure::enabled()). Every copy moves the whole image, W x H x 4 bytes
/// (image_copy_bytes), with the image in GENERAL:
///  - image_out_gbps: vkCmdCopyImageToBuffer out of `shared` into a device-local buffer,
///  - image_in_gbps: vkCmdCopyBufferToImage from that buffer into `shared`,
///  - image_private_out_gbps / image_private_in_gbps: the same copies through a
///    private image this function creates with `shared`'s shape (not external,
///    its own DEVICE_LOCAL memory),
///  - image_out_ratio / image_in_ratio: shared median / private median (no unit),
/// in GB/s (1e9 bytes/s) as measure::figure()s, each with its clock
/// (vk-timestamp, else wall with gpu_clock_fallback saying why). A sample is
/// image_copies_per_sample back-to-back copies in one submission, calibrated
/// on one private copy out so that a sample lasts ~5 ms (at most
/// measure::kMaxCopiesPerSample); the four kinds alternate within each of the
/// measure::repeats() rounds so that a busy machine slows them alike.
///
/// Precondition: this process's queue family owns `shared` and it is in
/// VK_IMAGE_LAYOUT_GENERAL, with no GPU work pending on it. Postcondition: the
/// same, with the same content (saved to a device-local buffer first and copied
/// back last, also after a failed sample). The first failing call is logged as
/// image_error ("<what>: <step> -> <VkResult>") and ends the sampling; nothing
/// is returned and nothing else reports it, so a figure can never change a
/// verdict. Sampling is sample_copies().
void measure_copies(const std::string& leg, const vk::Device& device, const vk::Image& shared);

}  // namespace extmem::probe::image
