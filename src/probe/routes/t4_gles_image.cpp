// T4-gles-image-same-proc and -cross-proc: the T4 owner's exported OPTIMAL
// image imported into GLES as a texture (GL_EXT_memory_object_fd:
// glImportMemoryFdEXT + glTexStorageMem2DEXT with GL_RGBA8), read through a
// framebuffer with glReadPixels and written by a scissored glClear; the owner
// checks the rectangle and the rest on its GPU; two rounds.
// docs/probe.md, "T4 image rows".
#include <dlfcn.h>

#include <functional>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "gles/egl_context.h"
#include "probe/routes.h"
#include "probe/routes/vk_image_share.h"
#include "probe/worker/drivers.h"
#include "probe/worker/half_end.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {
namespace {

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

// The texel value a glClear with bytes r, g, b, a leaves (R8G8B8A8: memory order r, g, b, a).
std::uint32_t clear_value(int round) { return round == 1 ? 0x44332211u : 0x88776655u; }

// GL's clear colour for clear_value(round): k/255 converts back to k exactly.
void clear_color(const TexFns& f, int round) {
  const std::uint32_t v = clear_value(round);
  auto c = [&](int shift) { return static_cast<float>((v >> shift) & 0xff) / 255.0f; };
  f.glClearColor(c(0), c(8), c(16), c(24));
}

// Where the GL side's writes are checked and the image refilled: the owner in
// this process (same-proc) or the owner process over the socket (cross-proc).
struct Owner {
  std::function<Result<Compare>(const Expected&)> check;
  std::function<Status(std::uint64_t)> fill;
};

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
  GLsync fence = gl.glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (fence == nullptr) return "glFenceSync -> " + gles::gl_error_name(egl.take_error());
  const GLenum waited = gl.glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 10'000'000'000ull);
  gl.glDeleteSync(fence);
  if (waited == GL_TIMEOUT_EXPIRED) return "glClientWaitSync -> GL_TIMEOUT_EXPIRED";
  if (waited == GL_WAIT_FAILED) return "glClientWaitSync -> GL_WAIT_FAILED " + gles::gl_error_name(egl.take_error());
  return {};
}

// The GL importer's whole part: context, UUID, the import ladder, two rounds.
void gl_image_leg(ChildContext& ctx, int fd, const nlohmann::json& info, const Owner& owner, RouteReport& rep,
                  Leg& leg) {
  leg.attempted = true;
  auto shape = image::shape_from_info(info);
  if (!shape) {
    rep.facts.fatal = why_of(shape.error());
    return;
  }
  ctx.step("create EGL context");
  auto created = drivers::egl_context();
  if (!created) {
    (created.error().kind == ErrorKind::unsupported ? rep.facts.unsupported : rep.facts.fatal) = why_of(created.error());
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
  const std::string vk_uuid = info.value("device_uuid", std::string());
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
  const bool dedicated = info.value("dedicated", false);
  const std::uint64_t alloc = info.value("allocation_size", std::uint64_t{0});
  const std::uint64_t fd_size = info.value("fd_size", std::uint64_t{0});
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
  rep.detail.push_back("sync=glFenceSync/glClientWaitSync and the socket (no GL_EXT_semaphore layouts: the "
                       "owner's Vulkan side waits on its fence before the GL side starts)");

  bool reads_ok = true, writes_ok = true;
  std::vector<std::byte> pixels(std::size_t{w} * h * 4);
  for (int round = 1; round <= 2; ++round) {
    ctx.step(fmt::format("round {}: glReadPixels of the texture through its framebuffer", round));
    f.glBindFramebuffer(GL_FRAMEBUFFER, tex.fbo);
    f.glReadPixels(0, 0, static_cast<GLsizei>(w), static_cast<GLsizei>(h), GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    if (const GLenum e = egl.take_error(); e != GL_NO_ERROR) {
      leg.failed_step = fmt::format("round {}: glReadPixels", round);
      leg.code = gles::gl_error_name(e);
      return;
    }
    const Compare got = image::compare(pixels, std::size_t{w} * 4, w, h, Expected{image::owner_seed(round)});
    if (!got.ok()) {
      reads_ok = false;
      add_note(leg, fmt::format("round {} GL read: {}", round, got.text()));
    }
    const Rect rect = image::round_rect(w, h, round);
    ctx.step(fmt::format("round {}: scissored glClear of the GL rectangle, then a fence", round));
    f.glEnable(GL_SCISSOR_TEST);
    f.glScissor(static_cast<GLint>(rect.x), static_cast<GLint>(rect.y), static_cast<GLsizei>(rect.w),
                static_cast<GLsizei>(rect.h));
    clear_color(f, round);
    f.glClear(GL_COLOR_BUFFER_BIT);
    f.glDisable(GL_SCISSOR_TEST);
    if (const GLenum e = egl.take_error(); e != GL_NO_ERROR) {
      leg.failed_step = fmt::format("round {}: glClear (scissored)", round);
      leg.code = gles::gl_error_name(e);
      return;
    }
    if (auto e = gl_wait(egl); !e.empty()) {
      leg.failed_step = fmt::format("round {}: wait for GL", round);
      leg.code = e;
      return;
    }
    ctx.step(fmt::format("round {}: the owner acquires and checks the rectangle and the rest", round));
    Expected after{image::owner_seed(round), rect, 0, clear_value(round)};
    auto checked = owner.check(after);
    if (!checked) {
      fail_leg(leg, checked.error());
      return;
    }
    if (!checked->ok()) {
      writes_ok = false;
      add_note(leg, fmt::format("round {} owner read: {}", round, checked->text()));
      // The fence is the sync this row stands on (GL: it covers every earlier command); whether
      // glFinish would have been enough tells a deferred clear from a write that never lands.
      ctx.step(fmt::format("round {}: glFinish, and the owner checks again", round));
      egl.gl().glFinish();
      auto again = owner.check(after);
      if (again && again->ok())
        add_note(leg, fmt::format("round {}: GL's scissored glClear reached the image only after glFinish, not after "
                                  "glFenceSync + glClientWaitSync(GL_SYNC_FLUSH_COMMANDS_BIT)",
                                  round));
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
              [&](std::uint64_t seed) { return image::fill_owned(ex, seed); }};
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
  if (setup->info.value("width", 0u) != ctx.params().image_width ||
      setup->info.value("height", 0u) != ctx.params().image_height) {
    rep.facts.fatal = "owner announced another image size than --image-size";
    return finish();
  }
  Owner owner{[&](const Expected& e) { return image::owner_check(ctx, e); },
              [&](std::uint64_t seed) { return image::owner_fill(ctx, seed); }};
  gl_image_leg(ctx, setup->fd.get(), setup->info, owner, rep, leg);
  return finish();
}

}  // namespace

constexpr std::string_view kGlImageExtensions[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
constexpr LegDef kGlImageLegs[] = {
    {"glimage", true,
     "GL reads every texel of the Vulkan owner's GPU fill through a framebuffer and the owner sees GL's scissored "
     "clear (rest intact), two rounds"},
};

extern const RouteDef kT4GlesImageSameProc{
    .row = "T4-gles-image-same-proc",
    .group = "t4",
    .needs = {.extensions = kGlImageExtensions, .gl = true},
    .legs = kGlImageLegs,
    .server = {"exports an OPTIMAL Vulkan image and imports a dup of its own fd as a GL texture", same_proc, true}};
extern const RouteDef kT4GlesImageCrossProc{
    .row = "T4-gles-image-cross-proc",
    .group = "t4",
    .needs = {.extensions = kGlImageExtensions, .gl = true},
    .legs = kGlImageLegs,
    .server = {"creates an OPTIMAL image, fills it on the GPU, exports an opaque fd, serves checks",
               [](ChildContext& c) { return image::owner_serve(c, VK_IMAGE_TILING_OPTIMAL); }},
    .client = {"imports the fd as a GL texture, reads it through a framebuffer, clears a rectangle, drives", cross_proc,
               true}};

}  // namespace extmem::probe
