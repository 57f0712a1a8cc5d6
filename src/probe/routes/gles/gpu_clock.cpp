#include "probe/routes/gles/gpu_clock.h"

#include <fmt/format.h>

#include "extmem/os/clock.h"

namespace extmem::probe::measure {

GlGpuClock::GlGpuClock(const gles::EglContext& ctx) : ctx_(&ctx) {
  const gles::GlFns& gl = ctx.gl();
  // GLES has no timer query without the extension; then the wall clock stands in, labelled.
  if (ctx.has_extension("GL_EXT_disjoint_timer_query") && gl.glGenQueriesEXT != nullptr && gl.glBeginQueryEXT != nullptr &&
      gl.glEndQueryEXT != nullptr && gl.glGetQueryObjectui64vEXT != nullptr && gl.glDeleteQueriesEXT != nullptr)
    gl.glGenQueriesEXT(1, &query_);
  if (query_ == 0) fallback_ = "GL_EXT_disjoint_timer_query not offered by the context";
}

GlGpuClock::~GlGpuClock() {
  if (query_ != 0) ctx_->gl().glDeleteQueriesEXT(1, &query_);
}

Result<Timed> GlGpuClock::time(const std::string& what, const std::function<void()>& commands) const {
  const gles::GlFns& gl = ctx_->gl();
  gl.glFinish();  // nothing queued before the sample may count in it
  if (query_ != 0) {
    GLint disjoint = 0;
    gl.glGetIntegerv(GL_GPU_DISJOINT_EXT, &disjoint);  // reading clears it: a fresh start for this sample
  }
  const double t0 = os::monotonic_seconds();
  if (query_ != 0) gl.glBeginQueryEXT(GL_TIME_ELAPSED_EXT, query_);
  commands();
  if (query_ != 0) gl.glEndQueryEXT(GL_TIME_ELAPSED_EXT);
  gl.glFinish();
  const double t1 = os::monotonic_seconds();
  if (GLenum e = ctx_->take_error(); e != GL_NO_ERROR) return Error{what, ErrorKind::driver, gles::gl_error_name(e), {}};
  if (query_ == 0 || uncovered_) return Timed{t1 - t0, clocks::wall};
  GLuint64 ns = 0;
  gl.glGetQueryObjectui64vEXT(query_, GL_QUERY_RESULT_EXT, &ns);  // waits for the result
  GLint disjoint = 0;
  gl.glGetIntegerv(GL_GPU_DISJOINT_EXT, &disjoint);
  if (GLenum e = ctx_->take_error(); e != GL_NO_ERROR)
    return Error{"glGetQueryObjectui64vEXT(GL_TIME_ELAPSED_EXT)", ErrorKind::driver, gles::gl_error_name(e), {}};
  const double gpu = static_cast<double>(ns) * 1e-9, wall = t1 - t0;
  // A disjoint operation (a clock change, a GPU reset) during the sample: this one sample falls back to the wall clock.
  if (disjoint != 0) {
    if (fallback_.empty()) fallback_ = what + ": GL_GPU_DISJOINT_EXT raised during a sample; such samples are wall-timed";
    return Timed{wall, clocks::wall};
  }
  // A query that did not cover the commands (they ran outside its begin and end on the GPU).
  if (wall >= kCoverCheckSeconds && gpu < kCoveredFraction * wall && ++uncovered_in_a_row_ >= kUncoveredToFallBack) {
    uncovered_ = true;
    if (fallback_.empty())
      fallback_ = fmt::format("{}: GL_TIME_ELAPSED_EXT gave {:.0f} us for a sample of {:.0f} us between glFinish calls "
                              "(under {:.0f}%): the query does not cover these commands on this driver; this and "
                              "every later sample are wall-timed",
                              what, gpu * 1e6, wall * 1e6, kCoveredFraction * 100);
    return Timed{wall, clocks::wall};
  }
  if (wall >= kCoverCheckSeconds && gpu >= kCoveredFraction * wall) uncovered_in_a_row_ = 0;
  return Timed{gpu, clocks::gl_time_elapsed};
}

}  // namespace extmem::probe::measure
