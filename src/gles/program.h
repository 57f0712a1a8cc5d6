// GLES programs built from source at run time: --measure's GL shader copy.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "extmem/core/error.h"
#include "gles/egl_context.h"

namespace extmem::gles {

/// Whether `ctx` runs compute shaders: a GLES 3.1 or newer context (compute
/// is core from 3.1; GL_VERSION "OpenGL ES 3.1 ...") whose glDispatchCompute
/// and program entry points resolved.
bool has_compute(const EglContext& ctx);

/// A linked program; deletes it on destruction (the context must outlive it).
class Program {
 public:
  /// Compiles each (shader type, GLSL ES source) of `stages`, attaches and links
  /// them. Errors (ErrorKind::driver): step "glCompileShader(<type>)" or
  /// "glLinkProgram" with code "not compiled"/"not linked" and the driver's
  /// info log as the detail; "glCreateShader" with the GL error name.
  static Result<Program> build(const EglContext& ctx, std::initializer_list<std::pair<GLenum, const char*>> stages);
  Program(Program&& o) noexcept : ctx_(o.ctx_), id_(std::exchange(o.id_, 0)) {}
  Program& operator=(Program&&) = delete;
  Program(const Program&) = delete;
  ~Program();
  GLuint id() const noexcept { return id_; }

 private:
  Program(const EglContext& ctx, GLuint id) : ctx_(&ctx), id_(id) {}
  const EglContext* ctx_;
  GLuint id_ = 0;
};

}  // namespace extmem::gles
