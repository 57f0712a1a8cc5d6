#include "probe/routes/t4_image/gl_handover.h"

#include <fmt/format.h>

#include "probe/worker/route_util.h"

namespace extmem::probe::image {

namespace {

// Waits for GL's work on the texture (glFenceSync + glClientWaitSync). Returns "" or the failing call and code.
std::string gl_wait(const gles::EglContext& egl) {
  const gles::GlFns& gl = egl.gl();
  (void)egl.take_error();
  GLsync fence = gl.glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (fence == nullptr) return "glFenceSync -> " + gles::gl_error_name(egl.take_error());
  const GLenum waited = gl.glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 10'000'000'000ull);
  gl.glDeleteSync(fence);
  if (waited == GL_TIMEOUT_EXPIRED) return "glClientWaitSync -> GL_TIMEOUT_EXPIRED";
  if (waited == GL_WAIT_FAILED) return "glClientWaitSync -> GL_WAIT_FAILED " + gles::gl_error_name(egl.take_error());
  return {};
}

}  // namespace

std::string gl_take(const gles::EglContext& egl, const GlHandover& h, const GlTexture& tex) {
  if (!h.sem) return {};
  (void)egl.take_error();
  egl.gl().glWaitSemaphoreEXT(h.sem->ready.id, 0, nullptr, 1, &tex.texture, &h.sem->wait_layout);
  const GLenum e = egl.take_error();
  if (e == GL_NO_ERROR) return {};
  return fmt::format("glWaitSemaphoreEXT({}) -> {}", glsem::gl_layout_name(h.sem->wait_layout), gles::gl_error_name(e));
}

std::string gl_give(const gles::EglContext& egl, const GlHandover& h, const GlTexture& tex) {
  if (!h.sem) return gl_wait(egl);
  (void)egl.take_error();
  egl.gl().glSignalSemaphoreEXT(h.sem->done.id, 0, nullptr, 1, &tex.texture, &h.sem->signal_layout);
  egl.gl().glFlush();
  const GLenum e = egl.take_error();
  if (e == GL_NO_ERROR) return {};
  return fmt::format("glSignalSemaphoreEXT({}) + glFlush -> {}", glsem::gl_layout_name(h.sem->signal_layout),
                     gles::gl_error_name(e));
}

std::string set_up_handover(ChildContext& ctx, const gles::EglContext& egl, const OwnerSemaphores& semaphores,
                            GlHandover& h, RouteReport& rep, std::string& failed_step) {
  const std::string fence_text = "glFenceSync + glClientWaitSync(GL_SYNC_FLUSH_COMMANDS_BIT)";
  auto use_fence = [&](const std::string& why) {
    h.after = fence_text;
    rep.detail.push_back("sync=glFenceSync/glClientWaitSync and the socket (GL_EXT_semaphore absent: " + why +
                         "; the owner's Vulkan side waits on its fence before the GL side starts)");
    return std::string();
  };
  // Both extensions named when both are missing; the owner is asked only when GL could use its semaphores.
  std::string missing;
  for (const char* e : {"GL_EXT_semaphore", "GL_EXT_semaphore_fd"})
    if (!egl.has_extension(e)) missing += (missing.empty() ? "" : " and ") + std::string(e);
  if (!missing.empty()) return use_fence(missing + " not exposed by the GLES context");
  ctx.step("the owner exports the handover semaphores");
  auto fds = semaphores(kGlSignalLayout);
  if (!fds) {
    if (fds.error().kind == ErrorKind::unsupported) return use_fence("owner: " + fds.error().detail);
    failed_step = "the owner's handover semaphores";
    return why_of(fds.error());
  }
  auto sem = std::make_unique<GlHandoverSemaphores>(egl);
  sem->wait_layout = *glsem::gl_layout_of(kGlWaitLayout);
  sem->signal_layout = *glsem::gl_layout_of(kGlSignalLayout);
  std::string ready_text, done_text;
  if (auto s = glsem::import_semaphore(ctx, egl, sem->ready, fds->released.get(), ready_text); !s) {
    failed_step = "import the owner's release semaphore";
    return why_of(s.error());
  }
  if (auto s = glsem::import_semaphore(ctx, egl, sem->done, fds->acquired.get(), done_text); !s) {
    failed_step = "import the owner's acquire semaphore";
    return why_of(s.error());
  }
  rep.detail.push_back(fmt::format(
      "sync=GL_EXT_semaphore layouts (binary OPAQUE_FD semaphores from the owner's Vulkan: glWaitSemaphoreEXT({}) "
      "after each release to VK_QUEUE_FAMILY_EXTERNAL in GENERAL, glSignalSemaphoreEXT({}) + glFlush before each "
      "acquire from COLOR_ATTACHMENT_OPTIMAL; wait {} signal {})",
      glsem::gl_layout_name(sem->wait_layout), glsem::gl_layout_name(sem->signal_layout), ready_text, done_text));
  h.after = "glSignalSemaphoreEXT(" + glsem::gl_layout_name(sem->signal_layout) + ") + glFlush";
  h.sem = std::move(sem);
  return {};
}

}  // namespace extmem::probe::image
