// --measure for the T4 image rows: GPU copy throughput through a shared
// (imported) image against a private image of the same create info on the
// same device. docs/probe.md, "T4 image rows" and the --measure description in
// README.md, "Bandwidth, latency and memory types".
#pragma once

#include <string>

#include "vulkan/context.h"
#include "vulkan/image.h"

namespace extmem::probe::image {

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
