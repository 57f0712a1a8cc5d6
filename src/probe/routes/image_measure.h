// --measure for the T4 image rows: GPU copy throughput through a shared
// (imported) image against a private image of the same create info on the
// same device. docs/probe.md, "T4 image rows" and the --measure description in
// README.md, "Bandwidth, latency and memory types".
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "extmem/core/error.h"
#include "probe/worker/measure.h"
#include "vulkan/context.h"
#include "vulkan/image.h"

namespace extmem::probe::image {

/// The four timed copies of an image measurement; the order is the order they
/// alternate in within a round.
enum class CopyKind : int {
  shared_out,   ///< out of the shared (imported) image: image_out_gbps
  private_out,  ///< out of the private image: image_private_out_gbps (also the calibration copy)
  shared_in,    ///< into the shared image: image_in_gbps
  private_in,   ///< into the private image: image_private_in_gbps
};

/// Times `copies` back-to-back copies of `kind`, each moving the whole image,
/// as one sample. Errors: the API's failing call (step) and its code verbatim.
using TimeCopies = std::function<Result<measure::Timed>(CopyKind kind, unsigned copies)>;

/// The sampling both APIs share (measure_copies here, gl_image_measure.h for
/// GL): calibrates the batch on one CopyKind::private_out copy so that a sample
/// lasts ~5 ms (at most measure::kMaxCopiesPerSample: image_copies_per_sample),
/// then measure::repeats() rounds of the four kinds in turn, and logs the four
/// figures in GB/s (`bytes` a copy, 1e9 bytes/s) with their clock, the two
/// ratios shared / private and gpu_clock. A figure's clock is the wall clock
/// when any of its samples was (a GL sample the disjoint check discarded), else
/// the GPU clock its samples name; gpu_clock likewise over the four. The first
/// failing sample is logged as image_error ("<figure key>: <step> ->
/// <code>") and ends the sampling; no figure is logged then. Nothing is
/// returned: a figure cannot reach a verdict.
void sample_copies(const std::string& leg, std::size_t bytes, const TimeCopies& timed);

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
/// verdict.
void measure_copies(const std::string& leg, const vk::Device& device, const vk::Image& shared);

}  // namespace extmem::probe::image
