#include "gles/program.h"

#include <cstdio>
#include <vector>

#include <fmt/format.h>

namespace extmem::gles {
namespace {

const char* stage_name(GLenum type) {
  switch (type) {
    case GL_VERTEX_SHADER: return "vertex";
    case GL_FRAGMENT_SHADER: return "fragment";
    case GL_COMPUTE_SHADER: return "compute";
  }
  return "shader";
}

}  // namespace

bool has_compute(const EglContext& ctx) {
  const GlFns& f = ctx.gl();
  int major = 0, minor = 0;
  if (std::sscanf(ctx.gl_version.c_str(), "OpenGL ES %d.%d", &major, &minor) != 2) return false;
  if (major < 3 || (major == 3 && minor < 1)) return false;
  return f.glDispatchCompute != nullptr && f.glCreateShader != nullptr && f.glLinkProgram != nullptr &&
         f.glBindBufferBase != nullptr && f.glUniform1ui != nullptr;
}

Result<Program> Program::build(const EglContext& ctx, std::initializer_list<std::pair<GLenum, const char*>> stages) {
  const GlFns& f = ctx.gl();
  (void)ctx.take_error();
  std::vector<GLuint> shaders;
  auto drop_shaders = [&] {
    // Deleting an attached shader only flags it; it goes with the program.
    for (GLuint s : shaders) f.glDeleteShader(s);
  };
  for (const auto& [type, source] : stages) {
    const GLuint s = f.glCreateShader(type);
    if (s == 0) {
      drop_shaders();
      return Error{fmt::format("glCreateShader({})", stage_name(type)), ErrorKind::driver,
                   gl_error_name(ctx.take_error()), {}};
    }
    shaders.push_back(s);
    f.glShaderSource(s, 1, &source, nullptr);
    f.glCompileShader(s);
    GLint ok = GL_FALSE;
    f.glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (ok != GL_TRUE) {
      char log[512] = {};
      f.glGetShaderInfoLog(s, sizeof log, nullptr, log);
      drop_shaders();
      return Error{fmt::format("glCompileShader({})", stage_name(type)), ErrorKind::driver, "not compiled", log};
    }
  }
  Program p(ctx, f.glCreateProgram());
  for (GLuint s : shaders) f.glAttachShader(p.id_, s);
  f.glLinkProgram(p.id_);
  drop_shaders();
  GLint ok = GL_FALSE;
  f.glGetProgramiv(p.id_, GL_LINK_STATUS, &ok);
  if (ok != GL_TRUE) {
    char log[512] = {};
    f.glGetProgramInfoLog(p.id_, sizeof log, nullptr, log);
    return Error{"glLinkProgram", ErrorKind::driver, "not linked", log};
  }
  return p;
}

Program::~Program() {
  if (id_ != 0) ctx_->gl().glDeleteProgram(id_);
}

}  // namespace extmem::gles
