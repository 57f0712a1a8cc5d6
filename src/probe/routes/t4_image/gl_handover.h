// How GL and the T4 image owner hand the image over: through two shared
// binary semaphores with GL_EXT_semaphore layouts where GL and the owner's
// Vulkan both offer them, else through GL's fence and the socket.
// docs/probe.md, "T4 image rows".
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gles/egl_context.h"
#include "probe/route_report.h"
#include "probe/routes/gles/semaphore.h"
#include "probe/routes/t4_image/gl_texture.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/child_context.h"

namespace extmem::probe::image {

// The layouts of the semaphore handover. The owner releases in GENERAL, so GL
// waits naming GL_LAYOUT_GENERAL_EXT; GL last renders to the texture, so it
// signals naming GL_LAYOUT_COLOR_ATTACHMENT_EXT and the owner's acquire
// transitions from COLOR_ATTACHMENT_OPTIMAL (GL_EXT_semaphore pairs each
// GL_LAYOUT_*_EXT with one VkImageLayout: glsem::gl_layout_of).
constexpr VkImageLayout kGlWaitLayout = image::kHandoverLayout;
constexpr VkImageLayout kGlSignalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;

// How GL and the owner hand the image over: with `sem` set, GL waits on
// `sem->ready` before it touches the texture and signals `sem->done` after
// (each naming the texture and its layout); otherwise GL's fence and the socket.
struct GlHandoverSemaphores {
  glsem::GlSemaphore ready, done;
  GLenum wait_layout = 0, signal_layout = 0;
  explicit GlHandoverSemaphores(const gles::EglContext& gl) : ready(gl), done(gl) {}
};
struct GlHandover {
  std::unique_ptr<GlHandoverSemaphores> sem;
  // "glFenceSync + glClientWaitSync(...)" or "glSignalSemaphoreEXT(...) + glFlush": what the texts name.
  std::string after;
};

/// GL takes the image (semaphore path: glWaitSemaphoreEXT on the texture).
/// Returns "" or the call and GL error.
std::string gl_take(const gles::EglContext& egl, const GlHandover& h, const GlTexture& tex);

/// GL hands the image back: semaphore path glSignalSemaphoreEXT on the texture
/// and glFlush (a binary semaphore's signal must be submitted before the
/// owner's wait is), else glFenceSync + glClientWaitSync. Returns "" or the
/// failing call and code.
std::string gl_give(const gles::EglContext& egl, const GlHandover& h, const GlTexture& tex);

/// Asks the owner to switch to the semaphore handover (its acquires then
/// transition from the given layout) and returns the two semaphore fds.
using OwnerSemaphores = std::function<Result<HandoverFds>(VkImageLayout)>;

/// Sets up the handover: the semaphore path where GL has GL_EXT_semaphore(_fd)
/// and the owner can export binary OPAQUE_FD semaphores, else the fence (with
/// the reason in the detail). Returns "" or, when the semaphore path was
/// offered and then failed, the failing step (in `failed_step`) and code: the row's FAIL.
std::string set_up_handover(ChildContext& ctx, const gles::EglContext& egl, const OwnerSemaphores& semaphores,
                            GlHandover& h, RouteReport& rep, std::string& failed_step);

}  // namespace extmem::probe::image
