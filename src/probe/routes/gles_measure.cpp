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
  auto seconds = [&](GLuint src, GLuint dst, unsigned copies) -> Result<double> {
    gl.glFinish();  // nothing queued before the sample may count in it
    const double t0 = os::monotonic_seconds();
    gl.glBindBuffer(GL_COPY_READ_BUFFER, src);
    gl.glBindBuffer(GL_COPY_WRITE_BUFFER, dst);
    for (unsigned c = 0; c < copies; ++c)
      gl.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(bytes));
    gl.glFinish();
    const double t1 = os::monotonic_seconds();
    if (GLenum e = ctx.take_error(); e != GL_NO_ERROR)
      return Error{"glCopyBufferSubData", ErrorKind::driver, gles::gl_error_name(e), {}};
    return t1 - t0;
  };
  measure::copy_leg(leg, bytes, true, [&](measure::Copy c, unsigned n) -> Result<double> {
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
  (void)ctx.take_error();
}

}  // namespace extmem::probe
