#include "probe/routes/t4_image/gl_texture.h"

#include <dlfcn.h>

#include <type_traits>
#include <utility>
#include <vector>

#include <EGL/egl.h>
#include <fmt/format.h>

#include "probe/worker/import_dup.h"
#include "probe/worker/route_util.h"

namespace extmem::probe::image {

TexFns load_tex_fns() {
  TexFns f;
  void* egl = ::dlopen("libEGL.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* gles = ::dlopen("libGLESv2.so.2", RTLD_NOW | RTLD_NOLOAD);
  auto gpa = egl != nullptr ? reinterpret_cast<PFNEGLGETPROCADDRESSPROC>(::dlsym(egl, "eglGetProcAddress")) : nullptr;
  auto load = [&](auto& slot, const char* name) {
    void* p = gpa != nullptr ? reinterpret_cast<void*>(gpa(name)) : nullptr;
    if (p == nullptr && gles != nullptr) p = ::dlsym(gles, name);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
    if (p == nullptr && f.missing.empty()) f.missing = name;
  };
  load(f.glGenTextures, "glGenTextures");
  load(f.glDeleteTextures, "glDeleteTextures");
  load(f.glBindTexture, "glBindTexture");
  load(f.glTexParameteri, "glTexParameteri");
  load(f.glGenFramebuffers, "glGenFramebuffers");
  load(f.glDeleteFramebuffers, "glDeleteFramebuffers");
  load(f.glBindFramebuffer, "glBindFramebuffer");
  load(f.glFramebufferTexture2D, "glFramebufferTexture2D");
  load(f.glCheckFramebufferStatus, "glCheckFramebufferStatus");
  load(f.glReadPixels, "glReadPixels");
  load(f.glEnable, "glEnable");
  load(f.glDisable, "glDisable");
  load(f.glScissor, "glScissor");
  load(f.glClearColor, "glClearColor");
  load(f.glClear, "glClear");
  load(f.glTexStorageMem2DEXT, "glTexStorageMem2DEXT");
  load(f.glViewport, "glViewport");
  load(f.glDrawArrays, "glDrawArrays");
  // Both were loaded already by the EGL context; these handles only add a reference.
  if (gles != nullptr) ::dlclose(gles);
  if (egl != nullptr) ::dlclose(egl);
  return f;
}


namespace {

// Tries one rung; on success `tex` holds a complete framebuffer on the texture.
// Returns "" or "<GL call> -> <GL error>". The fd note goes into `fd_note`.
std::string try_rung(const gles::EglContext& egl, const TexFns& f, int fd, const TexRung& rung, std::uint32_t w,
                     std::uint32_t h, GlTexture& tex, std::string& fd_note) {
  const gles::GlFns& gl = egl.gl();
  (void)egl.take_error();
  auto failed = [&](const char* call) -> std::string {
    const GLenum e = egl.take_error();
    return e == GL_NO_ERROR ? std::string() : fmt::format("{} -> {}", call, gles::gl_error_name(e));
  };
  gl.glCreateMemoryObjectsEXT(1, &tex.memory);
  if (auto e = failed("glCreateMemoryObjectsEXT"); !e.empty()) return e;
  if (rung.dedicated) {
    const GLint yes = GL_TRUE;
    gl.glMemoryObjectParameterivEXT(tex.memory, GL_DEDICATED_MEMORY_OBJECT_EXT, &yes);
    if (auto e = failed("glMemoryObjectParameterivEXT(GL_DEDICATED_MEMORY_OBJECT_EXT)"); !e.empty()) return e;
  }
  auto dup = ImportDup::of(fd);
  if (!dup) return why_of(dup.error());
  gl.glImportMemoryFdEXT(tex.memory, rung.import_size, GL_HANDLE_TYPE_OPAQUE_FD_EXT, dup->number());
  const GLenum import_error = egl.take_error();
  // A successful GL import owns the fd (GL_EXT_memory_object_fd), a failed one does not.
  fd_note = dup->settle(import_error == GL_NO_ERROR);
  if (import_error != GL_NO_ERROR) return "glImportMemoryFdEXT -> " + gles::gl_error_name(import_error);
  f.glGenTextures(1, &tex.texture);
  f.glBindTexture(GL_TEXTURE_2D, tex.texture);
  // The Vulkan image is OPTIMAL: GL must be told the same tiling (GL_EXT_memory_object; OPTIMAL is also its default).
  f.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_TILING_EXT, GL_OPTIMAL_TILING_EXT);
  f.glTexStorageMem2DEXT(GL_TEXTURE_2D, 1, GL_RGBA8, static_cast<GLsizei>(w), static_cast<GLsizei>(h), tex.memory, 0);
  if (auto e = failed("glTexStorageMem2DEXT(GL_RGBA8)"); !e.empty()) return e;
  f.glGenFramebuffers(1, &tex.fbo);
  f.glBindFramebuffer(GL_FRAMEBUFFER, tex.fbo);
  f.glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex.texture, 0);
  const GLenum status = f.glCheckFramebufferStatus(GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE) return fmt::format("glCheckFramebufferStatus -> 0x{:04x}", status);
  if (auto e = failed("glFramebufferTexture2D"); !e.empty()) return e;
  return {};
}

}  // namespace

bool import_texture(ChildContext& ctx, const gles::EglContext& egl, const TexFns& f, int fd,
                    const peer::SetupInfo& info, std::uint32_t w, std::uint32_t h, GlTexture& tex, RouteReport& rep,
                    Leg& leg) {
  const bool dedicated = info.dedicated.value_or(false);
  const std::uint64_t alloc = info.allocation_size.value_or(std::uint64_t{0});
  const std::uint64_t fd_size = info.fd_size.value_or(std::uint64_t{0});
  std::vector<TexRung> rungs;
  for (bool ded : {dedicated, !dedicated}) {
    rungs.push_back({ded, alloc, "allocation"});
    if (fd_size != 0 && fd_size != alloc) rungs.push_back({ded, fd_size, "fd"});
  }
  std::string accepted, ladder, last_error;
  for (const TexRung& rung : rungs) {
    ctx.step("glImportMemoryFdEXT + glTexStorageMem2DEXT(GL_RGBA8), " + rung.label());
    GlTexture attempt;
    attempt.ctx = &egl;
    attempt.fn = &f;
    std::string fd_note;
    const std::string error = try_rung(egl, f, fd, rung, w, h, attempt, fd_note);
    if (error.empty()) {
      accepted = rung.label();
      rep.detail.push_back("glimport " + fd_note);
      std::swap(tex.memory, attempt.memory);
      std::swap(tex.texture, attempt.texture);
      std::swap(tex.fbo, attempt.fbo);
      tex.ctx = &egl;
      tex.fn = &f;
      break;
    }
    ladder += fmt::format("{}{}: {}", ladder.empty() ? "" : "; ", rung.label(), error);
    last_error = error;
  }
  rep.detail.push_back("accepted=" + (accepted.empty() ? std::string("none") : accepted));
  if (!ladder.empty()) rep.detail.push_back("ladder: " + ladder);
  if (!accepted.empty()) return true;
  leg.failed_step = "glTexStorageMem2DEXT on the imported memory object (every ladder rung)";
  leg.code = last_error;
  return false;
}

}  // namespace extmem::probe::image
