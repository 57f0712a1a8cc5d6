#include "probe/routes/gles_measure.h"

#include <array>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "probe/worker/measure.h"

namespace extmem::probe {

void gl_copy_leg(const gles::EglContext& ctx, const std::string& leg, GLuint shared, std::size_t bytes) {
  if (!measure::enabled() || bytes == 0) return;
  const gles::GlFns& gl = ctx.gl();
  (void)ctx.take_error();
  std::array<GLuint, 3> plain{};  // 0 keeps the shared bytes, 1 and 2 are copy partners
  gl.glGenBuffers(static_cast<GLsizei>(plain.size()), plain.data());
  for (GLuint b : plain) {
    gl.glBindBuffer(GL_COPY_WRITE_BUFFER, b);
    gl.glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_COPY);
  }
  if (GLenum e = ctx.take_error(); e != GL_NO_ERROR) {
    measure::leg_field(leg, "gpu_error",
                       fmt::format("partner buffer: glBufferData({} bytes) -> {}", bytes, gles::gl_error_name(e)));
    gl.glDeleteBuffers(static_cast<GLsizei>(plain.size()), plain.data());
    return;
  }
  // GPU time from a GL_TIME_ELAPSED_EXT query where GL_EXT_disjoint_timer_query is offered;
  // GLES has no timer query otherwise, and then the wall clock stands in, labelled.
  GLuint query = 0;
  if (ctx.has_extension("GL_EXT_disjoint_timer_query") && gl.glGenQueriesEXT != nullptr && gl.glBeginQueryEXT != nullptr &&
      gl.glEndQueryEXT != nullptr && gl.glGetQueryObjectui64vEXT != nullptr && gl.glDeleteQueriesEXT != nullptr) {
    gl.glGenQueriesEXT(1, &query);
  } else {
    measure::leg_field(leg, "gpu_clock_fallback", "GL_EXT_disjoint_timer_query not offered by the context");
  }
  auto seconds = [&](GLuint src, GLuint dst, unsigned copies) -> Result<measure::Timed> {
    gl.glFinish();  // nothing queued before the sample may count in it
    if (query != 0) {
      GLint disjoint = 0;
      gl.glGetIntegerv(GL_GPU_DISJOINT_EXT, &disjoint);  // reading clears it: a fresh start for this sample
    }
    const double t0 = os::monotonic_seconds();
    if (query != 0) gl.glBeginQueryEXT(GL_TIME_ELAPSED_EXT, query);
    gl.glBindBuffer(GL_COPY_READ_BUFFER, src);
    gl.glBindBuffer(GL_COPY_WRITE_BUFFER, dst);
    for (unsigned c = 0; c < copies; ++c)
      gl.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(bytes));
    if (query != 0) gl.glEndQueryEXT(GL_TIME_ELAPSED_EXT);
    gl.glFinish();
    const double t1 = os::monotonic_seconds();
    if (GLenum e = ctx.take_error(); e != GL_NO_ERROR)
      return Error{"glCopyBufferSubData", ErrorKind::driver, gles::gl_error_name(e), {}};
    if (query == 0) return measure::Timed{t1 - t0, measure::clocks::wall};
    GLuint64 ns = 0;
    gl.glGetQueryObjectui64vEXT(query, GL_QUERY_RESULT_EXT, &ns);  // waits for the result
    GLint disjoint = 0;
    gl.glGetIntegerv(GL_GPU_DISJOINT_EXT, &disjoint);
    if (GLenum e = ctx.take_error(); e != GL_NO_ERROR)
      return Error{"glGetQueryObjectui64vEXT(GL_TIME_ELAPSED_EXT)", ErrorKind::driver, gles::gl_error_name(e), {}};
    // A disjoint operation (a clock change, a GPU reset) makes the query's value meaningless
    // (GL_EXT_disjoint_timer_query): that one sample falls back to the wall clock.
    if (disjoint != 0) return measure::Timed{t1 - t0, measure::clocks::wall};
    return measure::Timed{static_cast<double>(ns) * 1e-9, measure::clocks::gl_time_elapsed};
  };
  measure::copy_leg(leg, bytes, true, [&](measure::Copy c, unsigned n) -> Result<measure::Timed> {
    switch (c) {
      case measure::Copy::save: return seconds(shared, plain[0], n);
      case measure::Copy::out: return seconds(shared, plain[1], n);
      case measure::Copy::in: return seconds(plain[1], shared, n);
      case measure::Copy::baseline: return seconds(plain[1], plain[2], n);
      case measure::Copy::restore: return seconds(plain[0], shared, n);
    }
    return Error{"measure", ErrorKind::invalid_argument, {}, "unknown copy"};
  });
  gl.glDeleteBuffers(static_cast<GLsizei>(plain.size()), plain.data());
  if (query != 0) gl.glDeleteQueriesEXT(1, &query);
  (void)ctx.take_error();
}

}  // namespace extmem::probe
