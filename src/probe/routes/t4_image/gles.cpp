// T4-gles-image-same-proc and -cross-proc: the T4 owner's exported OPTIMAL
// image imported into GLES as a texture (GL_EXT_memory_object_fd:
// glImportMemoryFdEXT + glTexStorageMem2DEXT with GL_RGBA8), read through a
// framebuffer with glReadPixels and written by a scissored draw whose fragment
// shader computes a texel hash of its position; the owner checks every texel of
// the rectangle and the rest on its GPU; two rounds. The handover goes through
// two shared semaphores with GL_EXT_semaphore layouts where GL and the owner's
// Vulkan both offer them, else through a GL fence and the socket. Then, as a
// finding that does not decide the row, whether a scissored glClear is covered
// by that handover. docs/probe.md, "T4 image rows".
#include <dlfcn.h>

#include <chrono>
#include <cstring>

#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "gles/egl_context.h"
#include "gles/program.h"
#include "probe/routes.h"
#include "probe/routes/t4_image/gl_measure.h"
#include "probe/routes/gles/semaphore.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/drivers.h"
#include "probe/worker/half_end.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

using image::Compare;
using image::Expected;
using image::Rect;

// The GL entry points only these rows use, resolved here (eglGetProcAddress,
// then libGLESv2) so the shared GL table stays as it is.
struct TexFns {
  PFNGLGENTEXTURESPROC glGenTextures = nullptr;
  PFNGLDELETETEXTURESPROC glDeleteTextures = nullptr;
  PFNGLBINDTEXTUREPROC glBindTexture = nullptr;
  PFNGLTEXPARAMETERIPROC glTexParameteri = nullptr;
  PFNGLGENFRAMEBUFFERSPROC glGenFramebuffers = nullptr;
  PFNGLDELETEFRAMEBUFFERSPROC glDeleteFramebuffers = nullptr;
  PFNGLBINDFRAMEBUFFERPROC glBindFramebuffer = nullptr;
  PFNGLFRAMEBUFFERTEXTURE2DPROC glFramebufferTexture2D = nullptr;
  PFNGLCHECKFRAMEBUFFERSTATUSPROC glCheckFramebufferStatus = nullptr;
  PFNGLREADPIXELSPROC glReadPixels = nullptr;
  PFNGLENABLEPROC glEnable = nullptr;
  PFNGLDISABLEPROC glDisable = nullptr;
  PFNGLSCISSORPROC glScissor = nullptr;
  PFNGLCLEARCOLORPROC glClearColor = nullptr;
  PFNGLCLEARPROC glClear = nullptr;
  PFNGLTEXSTORAGEMEM2DEXTPROC glTexStorageMem2DEXT = nullptr;
  PFNGLVIEWPORTPROC glViewport = nullptr;
  PFNGLDRAWARRAYSPROC glDrawArrays = nullptr;

  // The first entry point that did not resolve, or empty.
  std::string missing;
};

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

// The imported texture, its memory object and the framebuffer reading and
// clearing it. Deletes the framebuffer, the texture, then the memory object.
struct GlTexture {
  const gles::EglContext* ctx = nullptr;
  const TexFns* fn = nullptr;
  GLuint memory = 0, texture = 0, fbo = 0;
  GlTexture() = default;
  GlTexture(const GlTexture&) = delete;
  GlTexture& operator=(const GlTexture&) = delete;
  ~GlTexture() {
    if (ctx == nullptr) return;
    if (fbo != 0) fn->glDeleteFramebuffers(1, &fbo);
    if (texture != 0) fn->glDeleteTextures(1, &texture);
    if (memory != 0) ctx->gl().glDeleteMemoryObjectsEXT(1, &memory);
    (void)ctx->take_error();
  }
};

// One phrasing of the import (docs/probe.md, "T1-gles": drivers differ in what they accept).
struct TexRung {
  bool dedicated = false;
  std::uint64_t import_size = 0;  // bytes given to glImportMemoryFdEXT
  std::string import_from;        // "allocation" (the exporter's allocationSize) or "fd" (the fd's own size)
  std::string label() const {
    return fmt::format("dedicated={} import={}({})", dedicated ? "on" : "off", import_from, import_size);
  }
};

// The draw: one triangle that covers the whole target (the scissor keeps it to
// the rectangle), no vertex attributes (gl_VertexID places the corners).
constexpr const char* kDrawVertex = R"(#version 300 es
void main() {
  gl_Position = vec4(gl_VertexID == 1 ? 3.0 : -1.0, gl_VertexID == 2 ? 3.0 : -1.0, 0.0, 1.0);
}
)";

// Each fragment writes image::gl_texel(seed, x, y) as R8G8B8A8 (byte k as k/255,
// which UNORM conversion turns back into k). Window y is texture row y, which
// is Vulkan's row y (glReadPixels and the owner agree on row 0), so no flip.
constexpr const char* kDrawFragment = R"(#version 300 es
precision highp float;
precision highp int;
uniform highp uint seed;
out vec4 colour;
void main() {
  uvec2 p = uvec2(gl_FragCoord.xy);
  uint z = seed + (p.x + 1u) * 0x9e3779b1u + (p.y + 1u) * 0x85ebca6bu;
  z ^= z >> 16u;
  z *= 0x7feb352du;
  z ^= z >> 15u;
  z *= 0x846ca68bu;
  z ^= z >> 16u;
  colour = vec4(uvec4(z, z >> 8u, z >> 16u, z >> 24u) & 255u) / 255.0;
}
)";

// The seed the GL draw of round `round` writes with (gl_texel's 32 bits).
std::uint32_t draw_seed(int round) { return static_cast<std::uint32_t>(image::importer_seed(round)); }

void set_scissor(const TexFns& f, const Rect& r) {
  f.glEnable(GL_SCISSOR_TEST);
  f.glScissor(static_cast<GLint>(r.x), static_cast<GLint>(r.y), static_cast<GLsizei>(r.w), static_cast<GLsizei>(r.h));
}

// The texel value the finding's glClear leaves, and its colour: k/255 converts back to k exactly.
constexpr std::uint32_t kClearValue = 0x44332211u;
void clear_color(const TexFns& f) {
  auto c = [&](int shift) { return static_cast<float>((kClearValue >> shift) & 0xff) / 255.0f; };
  f.glClearColor(c(0), c(8), c(16), c(24));
}

// Where the GL side's writes are checked and the image refilled: the owner in
// this process (same-proc) or the owner process over the socket (cross-proc).
struct Owner {
  std::function<Result<Compare>(const Expected&)> check;
  std::function<Status(std::uint64_t)> fill;
  /// Switches the owner to the semaphore handover; its acquires then transition from the given layout.
  std::function<Result<image::HandoverFds>(VkImageLayout)> semaphores;
};

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

// GL takes the image (semaphore path: glWaitSemaphoreEXT on the texture). Returns "" or the call and GL error.
std::string gl_take(const gles::EglContext& egl, const GlHandover& h, const GlTexture& tex) {
  if (!h.sem) return {};
  (void)egl.take_error();
  egl.gl().glWaitSemaphoreEXT(h.sem->ready.id, 0, nullptr, 1, &tex.texture, &h.sem->wait_layout);
  const GLenum e = egl.take_error();
  if (e == GL_NO_ERROR) return {};
  return fmt::format("glWaitSemaphoreEXT({}) -> {}", glsem::gl_layout_name(h.sem->wait_layout), gles::gl_error_name(e));
}

void add_note(Leg& leg, const std::string& note) { leg.note += (leg.note.empty() ? "" : "; ") + note; }

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

// GL hands the image back: semaphore path glSignalSemaphoreEXT on the texture
// and glFlush (a binary semaphore's signal must be submitted before the owner's
// wait is), else gl_wait. Returns "" or the failing call and code.
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

// Sets up the handover: the semaphore path where GL has GL_EXT_semaphore(_fd)
// and the owner can export binary OPAQUE_FD semaphores, else the fence (with
// the reason in the detail). Returns "" or, when the semaphore path was
// offered and then failed, the failing step and code (the row's FAIL).
std::string set_up_handover(ChildContext& ctx, const gles::EglContext& egl, const Owner& owner, GlHandover& h,
                            RouteReport& rep, std::string& failed_step) {
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
  auto fds = owner.semaphores(kGlSignalLayout);
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
// --measure (the measuring run only), once both rounds have decided the leg:
// the owner refills the image with a seed nothing else uses and releases it,
// GL takes it through the row's handover, times copies through the texture
// against a private one (t4_image/gl_measure.h), reads it back and compares, then
// hands it back and has the owner check it too, so the image ends as a round
// ends. Problems are logged beside the figures and never reach the leg. Returns
// false when a handover step failed (GL and the owner may then disagree on who
// holds the image, so nothing more may touch it).
bool measure_after_verdict(ChildContext& ctx, const gles::EglContext& egl, const TexFns& f, const Owner& owner,
                           const GlHandover& handover, const GlTexture& tex, std::uint32_t w, std::uint32_t h,
                           const std::string& leg) {
  const Expected kept{image::owner_seed(4)};  // rounds 1 and 2 and the clear finding use seeds 1 to 3
  auto field = [&](const char* key, nlohmann::json v) { measure::leg_field(leg, key, std::move(v)); };
  ctx.step("measure: the owner refills the image and releases it");
  if (auto s = owner.fill(kept.base_seed); !s) {
    field("image_error", "owner refill: " + why_of(s.error()));
    return false;
  }
  ctx.step(std::string("measure: ") + (handover.sem ? "glWaitSemaphoreEXT, then " : "") +
           "time GL copies through the texture and through a private texture");
  if (auto e = gl_take(egl, handover, tex); !e.empty()) {
    field("image_error", "GL takes the image: " + e);
    return false;
  }
  image::measure_gl_copies(egl, leg, tex.texture, w, h);
  ctx.step("measure: glReadPixels of the texture, GL hands the image back, the owner checks it");
  std::string restore;
  auto note = [&](const std::string& what) { restore += (restore.empty() ? "" : "; ") + what; };
  std::vector<std::byte> pixels(std::size_t{w} * h * 4);
  (void)egl.take_error();
  f.glBindFramebuffer(GL_FRAMEBUFFER, tex.fbo);
  f.glReadPixels(0, 0, static_cast<GLsizei>(w), static_cast<GLsizei>(h), GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  if (const GLenum e = egl.take_error(); e != GL_NO_ERROR)
    note("read back here: glReadPixels -> " + gles::gl_error_name(e));
  else if (const Compare c = image::compare(pixels, std::size_t{w} * 4, w, h, kept); !c.ok())
    note("read back here: " + c.text());
  // The hand-back runs even when the check failed, so the owner gets the image back.
  bool balanced = true;
  if (auto e = gl_give(egl, handover, tex); !e.empty()) {
    note("hand back: " + e);
    balanced = false;
  } else if (auto c = owner.check(kept); !c) {
    note("owner check: " + why_of(c.error()));
    balanced = false;
  } else if (!c->ok()) {
    note("owner read: " + c->text());
  }
  field("image_restored", restore.empty());
  if (!restore.empty()) field("image_restore_error", restore);
  return balanced;
}

// The GL importer's whole part: context, UUID, the import ladder, two rounds.
void gl_image_leg(ChildContext& ctx, int fd, const peer::SetupInfo& info, const Owner& owner, RouteReport& rep,
                  Leg& leg) {
  leg.attempted = true;
  auto shape = image::shape_from_info(info);
  if (!shape) {
    rep.facts.fatal = why_of(shape.error());
    rep.facts.stop_kind = shape.error().kind;
    return;
  }
  ctx.step("create EGL context");
  auto created = drivers::egl_context();
  if (!created) {
    stop_row(rep.facts, created.error().kind, why_of(created.error()));
    return;
  }
  const gles::EglContext& egl = **created;
  rep.detail.push_back(fmt::format("egl={} renderer=\"{}\"", egl.platform, egl.gl_renderer));
  for (const char* e : {"GL_EXT_memory_object", "GL_EXT_memory_object_fd"}) {
    if (!egl.has_extension(e)) {
      rep.facts.unsupported = std::string(e) + " not exposed by the GLES context";
      return;
    }
  }
  // UUID first: GL may only import memory of the device and driver it runs on (GL_EXT_external_objects).
  ctx.step("GL_DEVICE_UUID_EXT against the exporter's deviceUUID");
  const std::string vk_uuid = info.device_uuid.value_or(std::string());
  const std::string gl_uuid = egl.device_uuid().value_or("");
  rep.detail.push_back(fmt::format("uuid={}", gles::compare_uuid(gl_uuid, vk_uuid)));
  if (!gl_uuid.empty() && gl_uuid != vk_uuid) {
    rep.facts.unsupported = fmt::format("GL_DEVICE_UUID_EXT {} is not the exporter's deviceUUID {}: GL runs on another "
                                        "device or driver and may not import its fd",
                                        gl_uuid, vk_uuid);
    return;
  }
  const TexFns f = load_tex_fns();
  if (!f.missing.empty()) {
    rep.facts.unsupported = "GL entry point " + f.missing + " not found";
    return;
  }

  // The ladder: the exporter's dedicated choice first, then the other; the
  // exporter's allocation size, then the fd's own size where it has one.
  const std::uint32_t w = shape->width, h = shape->height;
  const bool dedicated = info.dedicated.value_or(false);
  const std::uint64_t alloc = info.allocation_size.value_or(std::uint64_t{0});
  const std::uint64_t fd_size = info.fd_size.value_or(std::uint64_t{0});
  std::vector<TexRung> rungs;
  for (bool ded : {dedicated, !dedicated}) {
    rungs.push_back({ded, alloc, "allocation"});
    if (fd_size != 0 && fd_size != alloc) rungs.push_back({ded, fd_size, "fd"});
  }
  GlTexture tex;
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
  if (accepted.empty()) {
    // The extensions are exposed and the UUIDs match, so a refusal on every rung is the driver's FAIL.
    leg.failed_step = "glTexStorageMem2DEXT on the imported memory object (every ladder rung)";
    leg.code = last_error;
    return;
  }
  GlHandover handover;
  {
    std::string failed_step;
    if (auto e = set_up_handover(ctx, egl, owner, handover, rep, failed_step); !e.empty()) {
      leg.failed_step = failed_step;
      leg.code = e;
      return;
    }
  }

  ctx.step("compile and link the GLES 3 draw program");
  auto prog = gles::Program::build(egl, {{GL_VERTEX_SHADER, kDrawVertex}, {GL_FRAGMENT_SHADER, kDrawFragment}});
  const GLint seed_at = prog ? egl.gl().glGetUniformLocation(prog->id(), "seed") : -1;
  if (!prog || seed_at < 0) {
    // A GLES 3 context that cannot build a two-line program is the driver's failure, not a missing feature.
    leg.failed_step = "build the draw program";
    leg.code = prog ? std::string("glGetUniformLocation(seed) -> -1") : prog.error().message();
    return;
  }
  rep.detail.push_back("write=scissored draw (one triangle over the target, the fragment shader writes a position "
                       "hash) then " + std::string(handover.sem ? "glSignalSemaphoreEXT" : "glFenceSync/glClientWaitSync"));

  bool reads_ok = true, writes_ok = true;
  std::vector<std::byte> pixels(std::size_t{w} * h * 4);
  std::string take_ms;  // semaphore path: how long GL's wait + read took each round (the test fault "late" shows there)
  for (int round = 1; round <= 2; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    if (handover.sem) ctx.step(fmt::format("round {}: glWaitSemaphoreEXT on the texture", round));
    if (auto e = gl_take(egl, handover, tex); !e.empty()) {
      leg.failed_step = fmt::format("round {}: GL takes the image", round);
      leg.code = e;
      return;
    }
    ctx.step(fmt::format("round {}: glReadPixels of the texture through its framebuffer", round));
    f.glBindFramebuffer(GL_FRAMEBUFFER, tex.fbo);
    f.glReadPixels(0, 0, static_cast<GLsizei>(w), static_cast<GLsizei>(h), GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    if (const GLenum e = egl.take_error(); e != GL_NO_ERROR) {
      leg.failed_step = fmt::format("round {}: glReadPixels", round);
      leg.code = gles::gl_error_name(e);
      return;
    }
    take_ms += fmt::format("{}{}", take_ms.empty() ? "" : "/",
                           std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    const Compare got = image::compare(pixels, std::size_t{w} * 4, w, h, Expected{image::owner_seed(round)});
    if (!got.ok()) {
      reads_ok = false;
      add_note(leg, fmt::format("round {} GL read: {}", round, got.text()));
    }
    const Rect rect = image::round_rect(w, h, round);
    ctx.step(fmt::format("round {}: scissored draw of the GL rectangle, then {}", round,
                         handover.sem ? "glSignalSemaphoreEXT" : "a fence"));
    f.glViewport(0, 0, static_cast<GLsizei>(w), static_cast<GLsizei>(h));  // a surfaceless context starts at 0x0
    egl.gl().glUseProgram(prog->id());
    egl.gl().glUniform1ui(seed_at, draw_seed(round));
    set_scissor(f, rect);
    f.glDrawArrays(GL_TRIANGLES, 0, 3);
    f.glDisable(GL_SCISSOR_TEST);
    egl.gl().glUseProgram(0);
    if (const GLenum e = egl.take_error(); e != GL_NO_ERROR) {
      leg.failed_step = fmt::format("round {}: glDrawArrays (scissored)", round);
      leg.code = gles::gl_error_name(e);
      return;
    }
    if (auto e = gl_give(egl, handover, tex); !e.empty()) {
      leg.failed_step = fmt::format("round {}: GL hands the image back", round);
      leg.code = e;
      return;
    }
    ctx.step(fmt::format("round {}: the owner acquires and checks the rectangle and the rest", round));
    Expected after{image::owner_seed(round), rect};
    after.rect_gl_seed = draw_seed(round);
    auto checked = owner.check(after);
    if (!checked) {
      fail_leg(leg, checked.error());
      return;
    }
    if (!checked->ok()) {
      writes_ok = false;
      add_note(leg, fmt::format("round {} owner read: {}", round, checked->text()));
      // The handover is the sync this row stands on (GL: fence and semaphore signal both cover every
      // earlier command); whether glFinish would have been enough tells a deferred write from one that never lands.
      ctx.step(fmt::format("round {}: glFinish, and the owner checks again", round));
      egl.gl().glFinish();
      auto again = owner.check(after);
      if (again && again->ok())
        add_note(leg, fmt::format("round {}: GL's scissored draw reached the image only after glFinish, not after {}",
                                  round, handover.after));
      else if (again)
        add_note(leg, fmt::format("round {} owner read after glFinish: {}", round, again->text()));
    }
    if (round == 1) {
      ctx.step("round 2: the owner refills the image with a new seed and releases it");
      if (auto s = owner.fill(image::owner_seed(2)); !s) {
        fail_leg(leg, s.error());
        return;
      }
    }
  }
  leg.read_ok = reads_ok;
  leg.write_ok = writes_ok;
  if (handover.sem) rep.detail.push_back("glwait+read-ms=" + take_ms);
  // The figures come after the verdict is final and only in the measuring run, whose detail is
  // not reported; its clear finding below then runs after the copies, on the measuring run only.
  if (reads_ok && writes_ok && measure::enabled() &&
      !measure_after_verdict(ctx, egl, f, owner, handover, tex, w, h, leg.name))
    return;

  // The finding beside the verdict: a scissored glClear (no draw after it) on a fresh fill, the
  // same handover, the same check. Zink on lavapipe keeps such a clear pending past the fence
  // (docs/results/lavapipe-mesa-22.3-images.md); the line says what this driver does.
  // The key names the handover the clear went through.
  const std::string key = handover.sem ? "glclear-after-signal" : "glclear-after-fence";
  ctx.step("clear finding: the owner refills the image with a third seed and releases it");
  if (auto s = owner.fill(image::owner_seed(3)); !s) {
    rep.detail.push_back(key + "=not measured (owner refill: " + why_of(s.error()) + ")");
    return;
  }
  if (auto e = gl_take(egl, handover, tex); !e.empty()) {
    rep.detail.push_back(key + "=not measured (" + e + ")");
    return;
  }
  const Rect rect = image::round_rect(w, h, 1);
  ctx.step("clear finding: scissored glClear of the round 1 rectangle, then GL hands the image back");
  f.glBindFramebuffer(GL_FRAMEBUFFER, tex.fbo);
  set_scissor(f, rect);
  clear_color(f);
  f.glClear(GL_COLOR_BUFFER_BIT);
  f.glDisable(GL_SCISSOR_TEST);
  if (const GLenum e = egl.take_error(); e != GL_NO_ERROR) {
    rep.detail.push_back(key + "=not measured (glClear -> " + gles::gl_error_name(e) + ")");
    return;
  }
  if (auto e = gl_give(egl, handover, tex); !e.empty()) {
    rep.detail.push_back(key + "=not measured (" + e + ")");
    return;
  }
  ctx.step("clear finding: the owner checks the rectangle and the rest");
  Expected cleared{image::owner_seed(3), rect};
  cleared.rect_constant = kClearValue;
  auto seen = owner.check(cleared);
  if (!seen) {
    rep.detail.push_back(key + "=not measured (owner check: " + why_of(seen.error()) + ")");
    return;
  }
  if (seen->ok()) {
    rep.detail.push_back(key + "=seen");
    return;
  }
  ctx.step("clear finding: glFinish, and the owner checks again");
  egl.gl().glFinish();
  auto again = owner.check(cleared);
  if (again && again->ok()) {
    rep.detail.push_back(key + "=late (a scissored glClear reached the image only after glFinish, not after " +
                         handover.after + "; informational, the verdict is the draw's)");
    return;
  }
  const std::string after_finish = again ? again->text() : why_of(again.error());
  // A read of the framebuffer must see the clear (GL orders it after the clear), so a driver
  // that keeps the clear pending has to do it now; then glFinish and one more check.
  ctx.step("clear finding: glReadPixels of one texel of the rectangle, glFinish, and the owner checks again");
  std::byte one[4] = {};
  f.glReadPixels(static_cast<GLint>(rect.x), static_cast<GLint>(rect.y), 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, one);
  egl.gl().glFinish();
  std::uint32_t gl_saw = 0;
  std::memcpy(&gl_saw, one, sizeof gl_saw);
  auto third = owner.check(cleared);
  if (third && third->ok())
    rep.detail.push_back(fmt::format("{}=after-read (a scissored glClear was not in the image after "
                                     "the handover nor after glFinish, only once GL read the framebuffer (GL read "
                                     "0x{:08x}) and finished: {}; informational, the verdict is the draw's)",
                                     key, gl_saw, after_finish));
  else
    rep.detail.push_back(fmt::format("{}=never (after glFinish: {}; after a GL read of 0x{:08x} and "
                                     "glFinish: {}; informational)",
                                     key, after_finish, gl_saw, third ? third->text() : why_of(third.error())));
}

int same_proc(ChildContext& ctx) {
  RouteReport rep;
  Leg leg{"glimage", true};
  auto finish = [&] {
    rep.legs = {leg};
    return end_half(ctx, rep, {}, Peer::none);
  };
  auto result = image::export_image(ctx, VK_IMAGE_TILING_OPTIMAL);
  if (auto* facts = std::get_if<RouteFacts>(&result)) {
    rep.facts = *facts;
    return finish();
  }
  image::ExportedImage& ex = std::get<image::ExportedImage>(result);
  Owner owner{[&](const Expected& e) { return image::check_owned(ex, e); },
              [&](std::uint64_t seed) { return image::fill_owned(ex, seed); },
              [&](VkImageLayout gl_layout) { return image::use_semaphores(ctx, ex, gl_layout); }};
  gl_image_leg(ctx, ex.fd.get(), ex.info, owner, rep, leg);
  return finish();
}

int cross_proc(ChildContext& ctx) {
  RouteReport rep;
  Leg leg{"glimage", true};
  auto finish = [&] {
    rep.legs = {leg};
    return end_half(ctx, rep);
  };
  auto setup = await_setup(ctx, rep, "the owner's exported image");
  if (!setup) return 0;
  if (!setup->info.image || setup->info.image->width != ctx.params().image_width ||
      setup->info.image->height != ctx.params().image_height) {
    rep.facts.fatal = "owner announced another image size than --image-size";
    return finish();
  }
  Owner owner{[&](const Expected& e) { return image::owner_check(ctx, e); },
              [&](std::uint64_t seed) { return image::owner_fill(ctx, seed); },
              [&](VkImageLayout gl_layout) { return image::owner_semaphores(ctx, gl_layout); }};
  gl_image_leg(ctx, setup->fd.get(), setup->info, owner, rep, leg);
  return finish();
}

constexpr std::string_view kGlImageExtensions[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
constexpr LegDef kGlImageLegs[] = {
    {"glimage", true,
     "GL reads every texel of the Vulkan owner's GPU fill through a framebuffer and the owner sees every texel of "
     "GL's scissored draw (rest intact) after the handover (GL_EXT_semaphore signal, or GL's fence), two rounds"},
};

const RouteDef kT4GlesImageSameProc{
    .row = "T4-gles-image-same-proc",
    .group = "t4",
    .needs = {.extensions = kGlImageExtensions, .gl = true},
    .legs = kGlImageLegs,
    .server = {"exports an OPTIMAL Vulkan image and imports a dup of its own fd as a GL texture", same_proc, true}};
const RouteDef kT4GlesImageCrossProc{
    .row = "T4-gles-image-cross-proc",
    .group = "t4",
    .needs = {.extensions = kGlImageExtensions, .gl = true},
    .legs = kGlImageLegs,
    .server = {"creates an OPTIMAL image, fills it on the GPU, exports an opaque fd, serves checks",
               [](ChildContext& c) { return image::owner_serve(c, VK_IMAGE_TILING_OPTIMAL); }},
    .client = {"imports the fd as a GL texture, reads it through a framebuffer, draws a rectangle, drives", cross_proc,
               true},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT4GlesImageSameProc, 190);
EXTMEM_ROUTE(kT4GlesImageCrossProc, 200);

}  // namespace extmem::probe
