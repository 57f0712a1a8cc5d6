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
/// two plain buffers as gpu_baseline_gbps. A sample is timed by wall clock
/// from a glFinish through its copies and a final glFinish (GL orders the
/// copies; GLES has no timer queries without GL_EXT_disjoint_timer_query). The
/// shared bytes are saved to a third plain buffer and put back. A GL error is
/// noted as leg.gpu_error ("<what>: <GL call> -> GL_…"). `ctx` must be
/// current. Does nothing unless measure::enabled().
void gl_copy_leg(const gles::EglContext& ctx, const std::string& leg, GLuint shared, std::size_t bytes);

}  // namespace extmem::probe
