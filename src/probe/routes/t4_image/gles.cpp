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
#include <chrono>
#include <cstring>

#include <functional>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "gles/egl_context.h"
#include "gles/program.h"
#include "probe/routes.h"
#include "probe/routes/t4_image/gl_handover.h"
#include "probe/routes/t4_image/gl_measure.h"
#include "probe/routes/t4_image/measure.h"
#include "probe/routes/t4_image/gl_texture.h"
#include "probe/routes/t4_image/round.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/drivers.h"
#include "probe/worker/half_end.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kGlImageLegs[] = {
    {"glimage", true,
     "GL reads every texel of the Vulkan owner's GPU fill through a framebuffer and the owner sees every texel of "
     "GL's scissored draw (rest intact) after the handover (GL_EXT_semaphore signal, or GL's fence), two rounds"},
};

using image::Compare;
using image::Expected;
using image::GlHandover;
using image::GlTexture;
using image::Rect;
using image::TexFns;

// Where the GL side's writes are checked and the image refilled (the owner in
// this process, same-proc, or the owner process over the socket, cross-proc),
// and how the owner switches to the semaphore handover.
struct Owner : image::Owner {
  image::OwnerSemaphores semaphores;
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
  ctx.step("measure: the owner refills the image and releases it");
  if (auto s = owner.fill(kept.base_seed); !s) {
    image::log_error(leg, "owner refill: " + why_of(s.error()));
    return false;
  }
  ctx.step(std::string("measure: ") + (handover.sem ? "glWaitSemaphoreEXT, then " : "") +
           "time GL copies through the texture and through a private texture");
  if (auto e = gl_take(egl, handover, tex); !e.empty()) {
    image::log_error(leg, "GL takes the image: " + e);
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
  image::log_restored(leg, restore);
  return balanced;
}

// The draw program and where its seed goes.
struct Draw {
  gles::Program program;
  GLint seed_at = -1;
};

// Compiles the draw program. Returns nullopt with the leg's failure set: a GLES 3
// context that cannot build a two-line program is the driver's failure, not a
// missing feature.
std::optional<Draw> build_draw(ChildContext& ctx, const gles::EglContext& egl, Leg& leg) {
  ctx.step("compile and link the GLES 3 draw program");
  auto prog = gles::Program::build(egl, {{GL_VERTEX_SHADER, kDrawVertex}, {GL_FRAGMENT_SHADER, kDrawFragment}});
  const GLint seed_at = prog ? egl.gl().glGetUniformLocation(prog->id(), "seed") : -1;
  if (!prog || seed_at < 0) {
    leg.failed_step = "build the draw program";
    leg.code = prog ? std::string("glGetUniformLocation(seed) -> -1") : prog.error().message();
    return std::nullopt;
  }
  return Draw{std::move(*prog), seed_at};
}

// GL for the import: the kept EGL context, the memory-object extensions, and
// GL's device UUID against the exporter's deviceUUID first (GL may only import
// memory of the device and driver it runs on: GL_EXT_external_objects). Returns
// null with the row's facts set.
const gles::EglContext* open_gl(ChildContext& ctx, const peer::SetupInfo& info, RouteReport& rep) {
  ctx.step("create EGL context");
  auto created = drivers::egl_context();
  if (!created) {
    stop_row(rep.facts, created.error().kind, why_of(created.error()));
    return nullptr;
  }
  const gles::EglContext& egl = **created;
  rep.detail.push_back(fmt::format("egl={} renderer=\"{}\"", egl.platform, egl.gl_renderer));
  for (const char* e : {"GL_EXT_memory_object", "GL_EXT_memory_object_fd"}) {
    if (!egl.has_extension(e)) {
      rep.facts.unsupported = std::string(e) + " not exposed by the GLES context";
      return nullptr;
    }
  }
  ctx.step("GL_DEVICE_UUID_EXT against the exporter's deviceUUID");
  const std::string vk_uuid = info.device_uuid.value_or(std::string());
  const std::string gl_uuid = egl.device_uuid().value_or("");
  rep.detail.push_back(fmt::format("uuid={}", gles::compare_uuid(gl_uuid, vk_uuid)));
  if (!gl_uuid.empty() && gl_uuid != vk_uuid) {
    rep.facts.unsupported = fmt::format("GL_DEVICE_UUID_EXT {} is not the exporter's deviceUUID {}: GL runs on another "
                                        "device or driver and may not import its fd",
                                        gl_uuid, vk_uuid);
    return nullptr;
  }
  return &egl;
}

// What GL's side of the rows holds once the texture is imported.
struct GlSide {
  const gles::EglContext& egl;
  const TexFns& f;
  const GlTexture& tex;
  const GlHandover& handover;
  const Draw& draw;
  std::uint32_t w = 0, h = 0;
};

// After the owner saw a wrong rectangle: the handover is the sync this row
// stands on (GL's fence and semaphore signal both cover every earlier
// command); whether glFinish would have been enough tells a deferred write
// from one that never lands.
void recheck_after_finish(ChildContext& ctx, const GlSide& gl, const Owner& owner, int round, const Expected& after,
                          Leg& leg) {
  ctx.step(fmt::format("round {}: glFinish, and the owner checks again", round));
  gl.egl.gl().glFinish();
  auto again = owner.check(after);
  if (again && again->ok())
    image::add_note(leg, fmt::format("round {}: GL's scissored draw reached the image only after glFinish, not after {}",
                                     round, gl.handover.after));
  else if (again)
    image::add_note(leg, fmt::format("round {} owner read after glFinish: {}", round, again->text()));
}

// The clear finding's last resort, when neither the handover nor glFinish
// brought the clear: a read of the framebuffer must see the clear (GL orders it
// after the clear), so a driver that keeps the clear pending has to do it now;
// then glFinish and one more check.
std::string clear_after_read(ChildContext& ctx, const GlSide& gl, const Owner& owner, const Rect& rect,
                             const Expected& cleared, const std::string& after_finish) {
  ctx.step("clear finding: glReadPixels of one texel of the rectangle, glFinish, and the owner checks again");
  std::byte one[4] = {};
  gl.f.glReadPixels(static_cast<GLint>(rect.x), static_cast<GLint>(rect.y), 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, one);
  gl.egl.gl().glFinish();
  std::uint32_t gl_saw = 0;
  std::memcpy(&gl_saw, one, sizeof gl_saw);
  auto third = owner.check(cleared);
  if (third && third->ok())
    return fmt::format("after-read (a scissored glClear was not in the image after the handover nor after glFinish, "
                       "only once GL read the framebuffer (GL read 0x{:08x}) and finished: {}; informational, the "
                       "verdict is the draw's)",
                       gl_saw, after_finish);
  return fmt::format("never (after glFinish: {}; after a GL read of 0x{:08x} and glFinish: {}; informational)",
                     after_finish, gl_saw, third ? third->text() : why_of(third.error()));
}

// The finding beside the verdict: a scissored glClear (no draw after it) on a
// fresh fill, the same handover, the same check. Zink on lavapipe keeps such a
// clear pending past the fence (docs/results/lavapipe-mesa-22.3-images.md); the
// returned value says what this driver does: seen, late, after-read, never, or
// not measured (why).
std::string clear_finding(ChildContext& ctx, const GlSide& gl, const Owner& owner) {
  ctx.step("clear finding: the owner refills the image with a third seed and releases it");
  if (auto s = owner.fill(image::owner_seed(3)); !s) return "not measured (owner refill: " + why_of(s.error()) + ")";
  if (auto e = gl_take(gl.egl, gl.handover, gl.tex); !e.empty()) return "not measured (" + e + ")";
  const Rect rect = image::round_rect(gl.w, gl.h, 1);
  ctx.step("clear finding: scissored glClear of the round 1 rectangle, then GL hands the image back");
  gl.f.glBindFramebuffer(GL_FRAMEBUFFER, gl.tex.fbo);
  set_scissor(gl.f, rect);
  clear_color(gl.f);
  gl.f.glClear(GL_COLOR_BUFFER_BIT);
  gl.f.glDisable(GL_SCISSOR_TEST);
  if (const GLenum e = gl.egl.take_error(); e != GL_NO_ERROR)
    return "not measured (glClear -> " + gles::gl_error_name(e) + ")";
  if (auto e = gl_give(gl.egl, gl.handover, gl.tex); !e.empty()) return "not measured (" + e + ")";
  ctx.step("clear finding: the owner checks the rectangle and the rest");
  Expected cleared{image::owner_seed(3), rect};
  cleared.rect_constant = kClearValue;
  auto seen = owner.check(cleared);
  if (!seen) return "not measured (owner check: " + why_of(seen.error()) + ")";
  if (seen->ok()) return "seen";
  ctx.step("clear finding: glFinish, and the owner checks again");
  gl.egl.gl().glFinish();
  auto again = owner.check(cleared);
  if (again && again->ok())
    return "late (a scissored glClear reached the image only after glFinish, not after " + gl.handover.after +
           "; informational, the verdict is the draw's)";
  return clear_after_read(ctx, gl, owner, rect, cleared, again ? again->text() : why_of(again.error()));
}

// A failed GL call as the leg's failure: the round's step, the call and GL's code.
Error gl_failure(std::string step, std::string code) { return Error{std::move(step), ErrorKind::driver, std::move(code)}; }

// GL's side of a round: take the image (glWaitSemaphoreEXT on the semaphore
// path) and glReadPixels all of it through the framebuffer; then the scissored
// draw of the rectangle and the hand-back. After a wrong rectangle, whether
// glFinish would have been enough tells a deferred write from one that never lands.
image::Importer gl_importer(ChildContext& ctx, const GlSide& gl, const Owner& owner, std::vector<std::byte>& pixels,
                            std::string& take_ms, Leg& leg) {
  image::Importer imp;
  imp.who = "GL";
  imp.read = [&](int round) -> Result<std::span<const std::byte>> {
    const auto t0 = std::chrono::steady_clock::now();
    if (gl.handover.sem) ctx.step(fmt::format("round {}: glWaitSemaphoreEXT on the texture", round));
    if (auto e = gl_take(gl.egl, gl.handover, gl.tex); !e.empty())
      return gl_failure(fmt::format("round {}: GL takes the image", round), e);
    ctx.step(fmt::format("round {}: glReadPixels of the texture through its framebuffer", round));
    gl.f.glBindFramebuffer(GL_FRAMEBUFFER, gl.tex.fbo);
    gl.f.glReadPixels(0, 0, static_cast<GLsizei>(gl.w), static_cast<GLsizei>(gl.h), GL_RGBA, GL_UNSIGNED_BYTE,
                      pixels.data());
    if (const GLenum e = gl.egl.take_error(); e != GL_NO_ERROR)
      return gl_failure(fmt::format("round {}: glReadPixels", round), gles::gl_error_name(e));
    take_ms += fmt::format("{}{}", take_ms.empty() ? "" : "/",
                           std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    return std::span<const std::byte>(pixels);
  };
  imp.write = [&](int round, const Rect& rect) -> Result<Expected> {
    ctx.step(fmt::format("round {}: scissored draw of the GL rectangle, then {}", round,
                         gl.handover.sem ? "glSignalSemaphoreEXT" : "a fence"));
    gl.f.glViewport(0, 0, static_cast<GLsizei>(gl.w), static_cast<GLsizei>(gl.h));  // a surfaceless context starts at 0x0
    gl.egl.gl().glUseProgram(gl.draw.program.id());
    gl.egl.gl().glUniform1ui(gl.draw.seed_at, draw_seed(round));
    set_scissor(gl.f, rect);
    gl.f.glDrawArrays(GL_TRIANGLES, 0, 3);
    gl.f.glDisable(GL_SCISSOR_TEST);
    gl.egl.gl().glUseProgram(0);
    if (const GLenum e = gl.egl.take_error(); e != GL_NO_ERROR)
      return gl_failure(fmt::format("round {}: glDrawArrays (scissored)", round), gles::gl_error_name(e));
    if (auto e = gl_give(gl.egl, gl.handover, gl.tex); !e.empty())
      return gl_failure(fmt::format("round {}: GL hands the image back", round), e);
    Expected after{image::owner_seed(round), rect};
    after.rect_gl_seed = draw_seed(round);
    return after;
  };
  imp.after_mismatch = [&](int round, const Expected& after) { recheck_after_finish(ctx, gl, owner, round, after, leg); };
  return imp;
}

// The GL importer's whole part: context, UUID, the import ladder, the
// handover, two rounds, then the clear finding.
void gl_image_leg(ChildContext& ctx, int fd, const peer::SetupInfo& info, const Owner& owner, RouteReport& rep,
                  Leg& leg) {
  leg.attempted = true;
  auto shape = image::shape_from_info(info);
  if (!shape) {
    rep.facts.fatal = why_of(shape.error());
    rep.facts.stop_kind = shape.error().kind;
    return;
  }
  const gles::EglContext* egl = open_gl(ctx, info, rep);
  if (egl == nullptr) return;
  const TexFns f = image::load_tex_fns();
  if (!f.missing.empty()) {
    rep.facts.unsupported = "GL entry point " + f.missing + " not found";
    return;
  }
  const std::uint32_t w = shape->width, h = shape->height;
  GlTexture tex;
  if (!image::import_texture(ctx, *egl, f, fd, info, w, h, tex, rep, leg)) return;
  GlHandover handover;
  std::string failed_step;
  if (auto e = set_up_handover(ctx, *egl, owner.semaphores, handover, rep, failed_step); !e.empty()) {
    leg.failed_step = failed_step;
    leg.code = e;
    return;
  }
  auto draw = build_draw(ctx, *egl, leg);
  if (!draw) return;
  rep.detail.push_back("write=scissored draw (one triangle over the target, the fragment shader writes a position "
                       "hash) then " + std::string(handover.sem ? "glSignalSemaphoreEXT" : "glFenceSync/glClientWaitSync"));

  const GlSide gl{*egl, f, tex, handover, *draw, w, h};
  std::vector<std::byte> pixels(std::size_t{w} * h * 4);
  std::string take_ms;  // semaphore path: how long GL's wait + read took each round (the test fault "late" shows there)
  if (!image::run_rounds(ctx, gl_importer(ctx, gl, owner, pixels, take_ms, leg), owner, w, h, leg)) return;
  if (handover.sem) rep.detail.push_back("glwait+read-ms=" + take_ms);
  // The figures come after the verdict is final and only in the measuring run, whose detail is
  // not reported; its clear finding below then runs after the copies, on the measuring run only.
  if (leg.read_ok && leg.write_ok && measure::enabled() &&
      !measure_after_verdict(ctx, *egl, f, owner, handover, tex, w, h, leg.name))
    return;
  // The key names the handover the clear went through.
  const std::string key = handover.sem ? "glclear-after-signal" : "glclear-after-fence";
  rep.detail.push_back(key + "=" + clear_finding(ctx, gl, owner));
}

int same_proc(ChildContext& ctx) {
  Leg leg = report_leg({kGlImageLegs, "glimage"});
  DrivingHalf half(ctx, {&leg}, Peer::none);
  RouteReport& rep = half.rep;
  auto result = image::export_image(ctx, VK_IMAGE_TILING_OPTIMAL);
  if (auto* facts = std::get_if<RouteFacts>(&result)) {
    rep.facts = *facts;
    return half.finish();
  }
  image::ExportedImage& ex = std::get<image::ExportedImage>(result);
  Owner owner{{[&](const Expected& e) { return image::check_owned(ex, e); },
               [&](std::uint64_t seed) { return image::fill_owned(ex, seed); }},
              [&](VkImageLayout gl_layout) { return image::use_semaphores(ctx, ex, gl_layout); }};
  gl_image_leg(ctx, ex.fd.get(), ex.info, owner, rep, leg);
  return half.finish();
}

int cross_proc(ChildContext& ctx) {
  Leg leg = report_leg({kGlImageLegs, "glimage"});
  DrivingHalf half(ctx, {&leg});
  RouteReport& rep = half.rep;
  auto in = image::await_image(ctx, half);
  if (!in) return half.finish();
  Owner owner{image::remote_owner(ctx),
              [&](VkImageLayout gl_layout) { return image::owner_semaphores(ctx, gl_layout); }};
  gl_image_leg(ctx, in->setup.fd.get(), in->setup.info, owner, rep, leg);
  return half.finish();
}

constexpr FaultDef kSameProcFaults[] = {image::kDecoyFault, image::kLateFault, image::transpose_fault(Role::server),
                                        image::mirror_fault(Role::server)};
constexpr FaultDef kCrossProcFaults[] = {image::kDecoyFault, image::kLateFault, image::transpose_fault(Role::client),
                                         image::mirror_fault(Role::client)};

const RouteDef kT4GlesImageSameProc{
    .row = "T4-gles-image-same-proc",
    .group = "t4",
    .needs = {.extensions = needs::kFdMemory, .gl = true},
    .legs = kGlImageLegs,
    .faults = kSameProcFaults,
    .server = {"exports an OPTIMAL Vulkan image and imports a dup of its own fd as a GL texture", same_proc, true}};
const RouteDef kT4GlesImageCrossProc{
    .row = "T4-gles-image-cross-proc",
    .group = "t4",
    .needs = {.extensions = needs::kFdMemory, .gl = true},
    .legs = kGlImageLegs,
    .faults = kCrossProcFaults,
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
