// --measure for the GL image rows (T4-gles-image-*): GL copy throughput
// through the imported texture against a private texture of the same internal
// format and size that GL creates itself. The GL twin of t4_image/measure.h,
// sharing its sampling (image::sample_copies) and its image_* keys.
// docs/probe.md, "T4 image rows", and docs/probe-options.md, "Bandwidth, latency and
// memory types".
#pragma once

#include <cstdint>
#include <string>

#include "gles/egl_context.h"

namespace extmem::probe::image {

/// Logs leg `leg`'s image copy figures (measure.h's log; nothing unless
/// measure::enabled()). `shared` is the imported texture: GL_TEXTURE_2D, one
/// level of GL_RGBA8, `width` x `height` texels. Every copy is one
/// glCopyImageSubData of the whole level (W x H x 4 bytes, image_copy_bytes;
/// image_copy names the entry point: GLES 3.2 core, else GL_EXT_copy_image's
/// or GL_OES_copy_image's suffixed twin), between two textures:
///  - image_out_gbps: out of `shared` into a partner texture,
///  - image_in_gbps: from that partner into `shared`,
///  - image_private_out_gbps / image_private_in_gbps: the same through a
///    private texture (glTexStorage2D, GL_RGBA8, the same size),
///  - image_out_ratio / image_in_ratio: shared median / private median,
/// sampled by image::sample_copies and timed by measure::GlGpuClock
/// (gl-time-elapsed, else wall with gpu_clock_fallback saying why). The
/// partner and the keeper of the shared texels are glTexStorage2D textures too.
///
/// Precondition: `ctx` is current and GL holds the image (after the handover's
/// wait). Postcondition: the texture holds the texels it held (saved to the
/// keeper first and copied back last, also after a failed sample), the copies
/// finished (glFinish), no texture bound to GL_TEXTURE_2D. The first failing
/// call is logged as image_error ("<what>: <GL call> -> <GL error name>") and
/// ends the sampling; nothing is returned, so a figure cannot reach a verdict.
void measure_gl_copies(const gles::EglContext& ctx, const std::string& leg, GLuint shared, std::uint32_t width,
                       std::uint32_t height);

}  // namespace extmem::probe::image
