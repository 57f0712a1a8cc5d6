// --measure: the GPU time of a run of GL commands, from a GL_TIME_ELAPSED_EXT
// query around them (GL_EXT_disjoint_timer_query), with the labelled wall-clock
// fallback where the context has no timer query. The GL twin of
// probe/worker/vk_gpu_clock.h; the GL buffer copies (gles_measure.h) and the GL
// image copies (gl_image_measure.h) both time with it. README.md, "Bandwidth,
// latency and memory types", and docs/probe.md, "T4 image rows".
#pragma once

#include <functional>
#include <string>

#include "extmem/core/error.h"
#include "gles/egl_context.h"
#include "probe/worker/measure.h"

namespace extmem::probe::measure {

/// One GL_TIME_ELAPSED_EXT query object on the current context, or the reason
/// there is none. Move-only in spirit (copy and move deleted); deletes the
/// query on destruction. The context must be current and outlive it.
class GlGpuClock {
 public:
  /// Generates the query where the context offers GL_EXT_disjoint_timer_query
  /// and its entry points resolved. Never fails: otherwise fallback() says why
  /// and time() uses the wall clock.
  explicit GlGpuClock(const gles::EglContext& ctx);
  GlGpuClock(const GlGpuClock&) = delete;
  GlGpuClock& operator=(const GlGpuClock&) = delete;
  ~GlGpuClock();

  /// Whether time() reads the GPU timer (clock clocks::gl_time_elapsed).
  bool timer() const noexcept { return query_ != 0; }
  /// Why the wall clock is used; empty with the timer.
  const std::string& fallback() const noexcept { return fallback_; }

  /// One sample: glFinish (nothing queued before may count), clears
  /// GL_GPU_DISJOINT_EXT, then `commands` between glBeginQueryEXT and
  /// glEndQueryEXT(GL_TIME_ELAPSED_EXT), then glFinish. Returns the query's
  /// nanoseconds as seconds (clock gl-time-elapsed), or the host's monotonic
  /// seconds around the commands and the final glFinish (clock wall) without
  /// the timer or when GL_GPU_DISJOINT_EXT was raised during the sample (the
  /// query's value is then meaningless: GL_EXT_disjoint_timer_query). Errors:
  /// Error{`what`, driver, the GL error name} when the commands raised one;
  /// Error{"glGetQueryObjectui64vEXT(GL_TIME_ELAPSED_EXT)", driver, name}.
  Result<Timed> time(const std::string& what, const std::function<void()>& commands) const;

 private:
  const gles::EglContext* ctx_;
  GLuint query_ = 0;
  std::string fallback_;
};

}  // namespace extmem::probe::measure
