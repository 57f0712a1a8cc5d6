// --measure figures of the GL GPU leg (glgpu) of the T1-gles rows, in the
// same JSON fields as the Vulkan GPU legs (probe/measure.h). Issue 6.
#pragma once

#include <cstddef>
#include <string>

#include "gles/egl_context.h"

namespace extmem::probe {

/// GPU copy bandwidth of leg `leg` through `shared` (the memory-object buffer,
/// at least `bytes` long): measure::copy_leg() with each copy a
/// glCopyBufferSubData of `bytes` between `shared` and a plain buffer
/// (glBufferData, GL_DYNAMIC_COPY) as gpu_out_gbps / gpu_in_gbps, and between
/// two plain buffers as gpu_baseline_gbps. A sample starts after a glFinish
/// and is timed on the GPU by a GL_TIME_ELAPSED_EXT query around its copies
/// (GL_EXT_disjoint_timer_query; clock "gl-time-elapsed"); without that
/// extension, for a sample during which GL_GPU_DISJOINT_EXT was raised, or once
/// the query was found not to cover the copies (measure::GlGpuClock), by wall
/// clock through a final glFinish (clock "wall", gpu_clock_fallback says why). GL orders the copies. The
/// shared bytes are saved to a third plain buffer and put back. A GL error is
/// noted as leg.gpu_error ("<what>: <GL call> -> GL_…"). Then the same three
/// figures with the copies done by a GLES 3.1 compute shader (16-byte loads and
/// stores, the twin of probe/worker/copy_words.comp) as shader_out_gbps /
/// shader_in_gbps / shader_baseline_gbps, or leg.shader_error saying why there
/// are none (a GLES 3.0 context, a size that is not a multiple of 16 or beyond
/// GL_MAX_SHADER_STORAGE_BLOCK_SIZE, a compile or link failure with the
/// driver's log). `ctx` must be current. Does nothing unless measure::enabled().
void gl_copy_leg(const gles::EglContext& ctx, const std::string& leg, GLuint shared, std::size_t bytes);

}  // namespace extmem::probe
