#include "probe/routes/gles/semaphore.h"

#include <fmt/format.h>

#include "probe/worker/import_dup.h"

namespace extmem::probe::glsem {

Error gl_error(const std::string& step, GLenum e) {
  return coded_error(step, ErrorKind::driver, CodeSpace::gl_enum, e, gles::gl_error_name(e));
}

Status gl_check(const gles::EglContext& gl, const std::string& step) {
  const GLenum e = gl.take_error();
  if (e != GL_NO_ERROR) return gl_error(step, e);
  return {};
}

Status import_semaphore(ChildContext& ctx, const gles::EglContext& gl, GlSemaphore& sem, int fd, std::string& fd_text) {
  const auto& f = gl.gl();
  auto dup = ImportDup::of(fd);
  if (!dup) return std::move(dup).error();
  ctx.step("glGenSemaphoresEXT + glImportSemaphoreFdEXT(GL_HANDLE_TYPE_OPAQUE_FD_EXT)");
  f.glGenSemaphoresEXT(1, &sem.id);
  f.glImportSemaphoreFdEXT(sem.id, GL_HANDLE_TYPE_OPAQUE_FD_EXT, dup->number());
  Status s = gl_check(gl, "glImportSemaphoreFdEXT(OPAQUE_FD)");
  // A successful import owns the fd (GL_EXT_semaphore_fd); settle() checks that the driver did what it says.
  fd_text = dup->settle(s.ok());
  return s;
}

std::optional<GLenum> gl_layout_of(VkImageLayout layout) {
  switch (layout) {
    case VK_IMAGE_LAYOUT_GENERAL: return GL_LAYOUT_GENERAL_EXT;
    case VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL: return GL_LAYOUT_COLOR_ATTACHMENT_EXT;
    case VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL: return GL_LAYOUT_DEPTH_STENCIL_ATTACHMENT_EXT;
    case VK_IMAGE_LAYOUT_DEPTH_STENCIL_READ_ONLY_OPTIMAL: return GL_LAYOUT_DEPTH_STENCIL_READ_ONLY_EXT;
    case VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL: return GL_LAYOUT_SHADER_READ_ONLY_EXT;
    case VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL: return GL_LAYOUT_TRANSFER_SRC_EXT;
    case VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL: return GL_LAYOUT_TRANSFER_DST_EXT;
    case VK_IMAGE_LAYOUT_DEPTH_READ_ONLY_STENCIL_ATTACHMENT_OPTIMAL:
      return GL_LAYOUT_DEPTH_READ_ONLY_STENCIL_ATTACHMENT_EXT;
    case VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_STENCIL_READ_ONLY_OPTIMAL:
      return GL_LAYOUT_DEPTH_ATTACHMENT_STENCIL_READ_ONLY_EXT;
    default: return std::nullopt;
  }
}

std::string gl_layout_name(GLenum layout) {
  switch (layout) {
    case GL_LAYOUT_GENERAL_EXT: return "GL_LAYOUT_GENERAL_EXT";
    case GL_LAYOUT_COLOR_ATTACHMENT_EXT: return "GL_LAYOUT_COLOR_ATTACHMENT_EXT";
    case GL_LAYOUT_DEPTH_STENCIL_ATTACHMENT_EXT: return "GL_LAYOUT_DEPTH_STENCIL_ATTACHMENT_EXT";
    case GL_LAYOUT_DEPTH_STENCIL_READ_ONLY_EXT: return "GL_LAYOUT_DEPTH_STENCIL_READ_ONLY_EXT";
    case GL_LAYOUT_SHADER_READ_ONLY_EXT: return "GL_LAYOUT_SHADER_READ_ONLY_EXT";
    case GL_LAYOUT_TRANSFER_SRC_EXT: return "GL_LAYOUT_TRANSFER_SRC_EXT";
    case GL_LAYOUT_TRANSFER_DST_EXT: return "GL_LAYOUT_TRANSFER_DST_EXT";
    case GL_LAYOUT_DEPTH_READ_ONLY_STENCIL_ATTACHMENT_EXT: return "GL_LAYOUT_DEPTH_READ_ONLY_STENCIL_ATTACHMENT_EXT";
    case GL_LAYOUT_DEPTH_ATTACHMENT_STENCIL_READ_ONLY_EXT: return "GL_LAYOUT_DEPTH_ATTACHMENT_STENCIL_READ_ONLY_EXT";
    default: return fmt::format("0x{:04x}", layout);
  }
}

}  // namespace extmem::probe::glsem
