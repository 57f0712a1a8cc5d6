// --measure for T4-image-cuda: CUDA copy throughput through the imported CUDA
// array against a private CUDA array of the same shape, logged under the same
// image_* keys as the Vulkan image rows (t4_image/measure.h), so the text line
// and the schema read both alike. docs/probe.md, "T4 image rows".
#pragma once

#include <string>

#include "cuda/api.h"

namespace extmem::probe::image {

/// Logs leg `leg`'s image copy figures (measure.h's log; nothing unless
/// measure::enabled()). `shared` is the imported array (level 0 of the
/// mapped mipmapped array) and `shape` the descriptor it was mapped with:
/// Depth 0, CU_AD_FORMAT_UNSIGNED_INT8, 4 channels (anything else is
/// image_error, nothing is copied). Every copy moves the whole array, Width x
/// Height x 4 bytes (image_copy_bytes), with one cuMemcpy2DAsync on a stream
/// of this function's between the array and a cuMemAlloc buffer (rows tightly
/// packed):
///  - image_out_gbps: `shared` -> the buffer, image_in_gbps: the buffer -> `shared`,
///  - image_private_out_gbps / image_private_in_gbps: the same through a
///    private array from cuArray3DCreate with `shape` (its Flags dropped to 0
///    when the driver refuses them for a plain array; image_private_array_flags
///    says which were used),
///  - ratios and copies per sample as image::sample_copies() (t4_image/measure.h)
///    computes them, each sample timed by cuEventElapsedTime between two events
///    recorded on the stream around its copies (clock "cuda-event").
///
/// Precondition: the current context is the one `shared` was imported into, and
/// no work on `shared` is pending. Postcondition: the same, with the same
/// content: the array is copied to a second cuMemAlloc buffer before any
/// timed copy and back after the last one (also after a failed sample), and
/// the stream is synchronised before returning. Every failing call is logged
/// as image_error ("<what>: <step> -> <CUresult name>", the first one; a
/// failed restore after a failed sample is appended after "; "); nothing is
/// returned, so no figure can change a verdict.
void cuda_measure_copies(const cuda::Api& api, const std::string& leg, CUarray shared,
                         const CUDA_ARRAY3D_DESCRIPTOR& shape);

}  // namespace extmem::probe::image
