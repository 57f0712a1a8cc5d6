#include "probe/routes/gles/measure.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "gles/program.h"
#include "probe/routes/gles/gpu_clock.h"
#include "probe/worker/measure.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

// The GL twin of probe/worker/copy_words.comp: dst = src, 16 bytes a load and
// a store, every invocation striding over the buffer.
constexpr const char* kCopyWordsCompute = R"(#version 310 es
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Src { uvec4 words[]; } src;
layout(std430, binding = 1) writeonly buffer Dst { uvec4 words[]; } dst;
uniform uint words;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < words; i += stride) dst.words[i] = src.words[i];
}
)";
constexpr GLuint kCopyLocalSize = 256;
constexpr GLuint kCopyMaxGroups = 65535;  // GL_MAX_COMPUTE_WORK_GROUP_COUNT's required minimum (GLES 3.1)

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void gl_copy_leg(const gles::EglContext& ctx, const std::string& leg, GLuint shared, std::size_t bytes) {
  if (!measure::enabled() || bytes == 0) return;
  LegFigures& figures = *measure::leg(leg);
  const gles::GlFns& gl = ctx.gl();
  (void)ctx.take_error();
  std::array<GLuint, 3> plain{};  // 0 keeps the shared bytes, 1 and 2 are copy partners
  gl.glGenBuffers(static_cast<GLsizei>(plain.size()), plain.data());
  for (GLuint b : plain) {
    gl.glBindBuffer(GL_COPY_WRITE_BUFFER, b);
    gl.glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_COPY);
  }
  if (GLenum e = ctx.take_error(); e != GL_NO_ERROR) {
    figures.gpu.error = fmt::format("partner buffer: glBufferData({} bytes) -> {}", bytes, gles::gl_error_name(e));
    gl.glDeleteBuffers(static_cast<GLsizei>(plain.size()), plain.data());
    return;
  }
  // GPU time from a GL_TIME_ELAPSED_EXT query where GL_EXT_disjoint_timer_query is offered, else the wall clock, labelled.
  const measure::GlGpuClock clock(ctx);  // its fallback, from the start or from a sample, is logged at the end
  auto timed = [&](const char* what, const std::function<void()>& copies) { return clock.time(what, copies); };
  auto command_copy = [&](GLuint src, GLuint dst, unsigned copies) {
    return timed("glCopyBufferSubData", [&] {
      gl.glBindBuffer(GL_COPY_READ_BUFFER, src);
      gl.glBindBuffer(GL_COPY_WRITE_BUFFER, dst);
      for (unsigned c = 0; c < copies; ++c)
        gl.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(bytes));
    });
  };
  // Which buffers each copy moves between: the route's, the keeper, the two partners.
  auto ends = [&](measure::Copy c) -> std::pair<GLuint, GLuint> {
    switch (c) {
      case measure::Copy::save: return {shared, plain[0]};
      case measure::Copy::out: return {shared, plain[1]};
      case measure::Copy::in: return {plain[1], shared};
      case measure::Copy::baseline: return {plain[1], plain[2]};
      case measure::Copy::restore: break;
    }
    return {plain[0], shared};
  };
  measure::copy_leg(leg, bytes, true, [&](measure::Copy c, unsigned n) { return command_copy(ends(c).first, ends(c).second, n); });
  // The same figures through the shader cores; the route's bytes are saved and put back by glCopyBufferSubData.
  GLint max_block = 0;  // GL_MAX_SHADER_STORAGE_BLOCK_SIZE is 64-bit; glGetIntegerv clamps it to INT_MAX
  if (gles::has_compute(ctx)) gl.glGetIntegerv(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &max_block);
  auto program = gles::has_compute(ctx) ? gles::Program::build(ctx, {{GL_COMPUTE_SHADER, kCopyWordsCompute}})
                                        : Result<gles::Program>(Error{"compute shaders", ErrorKind::unsupported,
                                                                      "not in " + ctx.gl_version, {}});
  if (!program) {
    figures.shader.error = program.error().message();
  } else if (bytes % 16 != 0 || max_block <= 0 || bytes > static_cast<std::size_t>(max_block)) {
    figures.shader.error = fmt::format(
        "{} bytes: not a multiple of 16 or beyond GL_MAX_SHADER_STORAGE_BLOCK_SIZE ({})", bytes, max_block);
  } else {
    const GLint words_at = gl.glGetUniformLocation(program->id(), "words");
    const auto words = static_cast<GLuint>(bytes / 16);
    const GLuint groups = std::min(kCopyMaxGroups, (words + kCopyLocalSize - 1) / kCopyLocalSize);
    measure::copy_leg(
        leg, bytes, true,
        [&](measure::Copy c, unsigned n) -> Result<measure::Timed> {
          const std::pair<GLuint, GLuint> e = ends(c);
          if (c == measure::Copy::save || c == measure::Copy::restore) return command_copy(e.first, e.second, n);
          return timed("glDispatchCompute", [&] {
            // Earlier copy-command and shader writes are visible to the shader; its writes to later copies.
            gl.glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
            gl.glUseProgram(program->id());
            gl.glUniform1ui(words_at, words);
            gl.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, e.first);
            gl.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, e.second);
            for (unsigned i = 0; i < n; ++i) {
              if (i > 0) gl.glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
              gl.glDispatchCompute(groups, 1, 1);
            }
            gl.glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
            gl.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
            gl.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, 0);
            gl.glUseProgram(0);
          });
        },
        &LegFigures::shader);
  }
  if (!clock.fallback().empty()) figures.gpu_clock_fallback = clock.fallback();
  gl.glDeleteBuffers(static_cast<GLsizei>(plain.size()), plain.data());
  (void)ctx.take_error();
}

}  // namespace extmem::probe
