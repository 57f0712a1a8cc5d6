// GL_EXT_semaphore pieces shared by the rows that import a Vulkan semaphore
// into GL: S1-gles-semaphore (docs/probe.md, "S1") and the T4 GL image rows
// (docs/probe.md, "T4 image rows"). A GL error as our Error, a GL semaphore
// deleted with its context, the opaque-fd import with its ownership check,
// and the GL_LAYOUT_*_EXT value that stands for a VkImageLayout.
#pragma once

#include <optional>
#include <string>

#include <vulkan/vulkan.h>

#include "extmem/core/error.h"
#include "gles/egl_context.h"
#include "probe/worker/child_context.h"

namespace extmem::probe::glsem {

/// Error{step, driver, the GL error's name (GL_INVALID_OPERATION, ...)}, native `e`.
Error gl_error(const std::string& step, GLenum e);

/// Drains glGetError; an error there is gl_error(step, it), else success.
Status gl_check(const gles::EglContext& gl, const std::string& step);

/// A GL semaphore name, deleted (glDeleteSemaphoresEXT) by the destructor
/// unless `leaked` (set when GPU work that still waits on it did not drain).
/// Borrows the context, which must outlive it and be current.
struct GlSemaphore {
  const gles::EglContext& gl;
  GLuint id = 0;
  bool leaked = false;
  explicit GlSemaphore(const gles::EglContext& context) : gl(context) {}
  GlSemaphore(const GlSemaphore&) = delete;
  GlSemaphore& operator=(const GlSemaphore&) = delete;
  ~GlSemaphore() {
    if (id != 0 && !leaked) gl.gl().glDeleteSemaphoresEXT(1, &id);
  }
};

/// glGenSemaphoresEXT into `sem`, then glImportSemaphoreFdEXT(OPAQUE_FD) of a
/// dup of `fd` (announced as a step of `ctx`). `fd` stays the caller's: the
/// dup is what GL takes, and after a successful import GL owns it (the
/// GL_EXT_semaphore_fd rule), after a failed one it is closed here.
/// `fd_text` gets ImportDup::settle()'s "fd-consumed=yes|no ...".
/// Needs GL_EXT_semaphore_fd (the entry points are null without it).
/// Errors: the dup's errno; gl_error("glImportSemaphoreFdEXT(OPAQUE_FD)", code).
Status import_semaphore(ChildContext& ctx, const gles::EglContext& gl, GlSemaphore& sem, int fd, std::string& fd_text);

/// The GL_LAYOUT_*_EXT value GL_EXT_semaphore gives for `layout` in
/// glWaitSemaphoreEXT / glSignalSemaphoreEXT (the extension's table pairs each
/// with one VkImageLayout), or nullopt for a layout it has no value for
/// (UNDEFINED, PREINITIALIZED, PRESENT_SRC_KHR, ...).
std::optional<GLenum> gl_layout_of(VkImageLayout layout);

/// "GL_LAYOUT_GENERAL_EXT", ... for a value gl_layout_of returns; "0x...." otherwise.
std::string gl_layout_name(GLenum layout);

}  // namespace extmem::probe::glsem
