// --measure: the GPU time of a run of GL commands, from a GL_TIME_ELAPSED_EXT
// query around them (GL_EXT_disjoint_timer_query), with the labelled wall-clock
// fallback where the context has no timer query. The GL twin of
// probe/worker/vk_gpu_clock.h; the GL buffer copies (gles/measure.h) and the GL
// image copies (t4_image/gl_measure.h) both time with it. docs/probe-options.md, "Bandwidth,
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
  /// Why the wall clock is used: from the start (no timer), or since time()
  /// first put a sample on it (disjoint, or a query that did not cover the
  /// commands); empty while every sample was GPU-timed. Log it after sampling.
  const std::string& fallback() const noexcept { return fallback_; }

  /// One sample: glFinish (nothing queued before may count), clears
  /// GL_GPU_DISJOINT_EXT, then `commands` between glBeginQueryEXT and
  /// glEndQueryEXT(GL_TIME_ELAPSED_EXT), then glFinish. Returns the query's
  /// nanoseconds as seconds (clock gl-time-elapsed), or the host's monotonic
  /// seconds around the commands and the final glFinish (clock wall) without
  /// the timer, when GL_GPU_DISJOINT_EXT was raised during the sample (the
  /// query's value is then meaningless: GL_EXT_disjoint_timer_query), or when
  /// the query's time is under kCoveredFraction of a wall span of at least
  /// kCoverCheckSeconds: the GPU work of the commands cannot be that much
  /// shorter than glFinish to glFinish around them, so the query did not
  /// bracket them (zink over lavapipe: ~17 us for copies the wall clock puts
  /// at ~2 ms; docs/probe.md, "T4 image rows") once kUncoveredToFallBack
  /// such samples came in a row: one or two can be a driver's work outside the
  /// GPU (NVIDIA 580 allocates a glBufferData buffer at its first use: 772 us
  /// on the GPU in a 6.4 ms sample, the next samples covered), and a covered
  /// sample starts the count again. That finding sticks: every later sample of
  /// this clock is wall-timed too, since whether the driver covers the
  /// commands may change with its state. Errors:
  /// Error{`what`, driver, the GL error name} when the commands raised one;
  /// Error{"glGetQueryObjectui64vEXT(GL_TIME_ELAPSED_EXT)", driver, name}.
  Result<Timed> time(const std::string& what, const std::function<void()>& commands) const;

  /// The coverage check of time(): a wall span (seconds) from which on a GPU
  /// time under that fraction of it is not believed.
  static constexpr double kCoverCheckSeconds = 0.001;
  static constexpr double kCoveredFraction = 0.25;
  static constexpr int kUncoveredToFallBack = 3;

 private:
  const gles::EglContext* ctx_;
  GLuint query_ = 0;
  mutable std::string fallback_;  // set once, by the first sample time() puts on the wall clock
  mutable int uncovered_in_a_row_ = 0;  // samples in a row whose query did not cover their commands
  mutable bool uncovered_ = false;  // kUncoveredToFallBack of them: wall clock from then on
};

}  // namespace extmem::probe::measure
