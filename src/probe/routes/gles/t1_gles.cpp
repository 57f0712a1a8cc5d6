// T1-gles: the T1 opaque-fd export imported into GLES buffer storage
// (GL_EXT_memory_object_fd), in the exporting process itself (same-proc: does
// GL accept this fd at all?) and in the other process (cross-proc).
// docs/probe.md, "T1-gles".
#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/core/zerocopy.h"
#include "gles/egl_context.h"
#include "extmem/gles/enumerate.h"
#include "probe/routes/gles/import.h"
#include "probe/routes/gles/measure.h"
#include "probe/worker/drivers.h"
#include "probe/worker/gpu_access.h"
#include "probe/worker/peer.h"
#include "probe/worker/measure.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kGlLegs[] = {
    {"glmap", false, "the GL buffer on the imported memory object, mapped persistent, shares the bytes"},
    {"glgpu", true, "GL copies out of and writes into the imported buffer, seen by the Vulkan exporter"},
};

// The CPU leg through glMapBufferRange(PERSISTENT|COHERENT) is informational:
// GL_EXT_external_objects gives memory-object storage no map flags (Mesa passes
// flags 0; NVIDIA 580 reports GL_BUFFER_STORAGE_FLAGS 0x100, DYNAMIC_STORAGE only), so a refused map is
// conformant, as a refused raw mmap of an opaque fd is. The GPU leg decides.
// The detail still tells storage-refused from persistent-map-refused.
Leg map_leg() { return Leg{"glmap", false}; }

// Where the GL side's writes are checked: the exporter's own Vulkan mapping
// (same-proc) or the exporting process over the peer socket (cross-proc).
// `far` is that same view as the far side of the GL leg's whole-allocation sweep.
struct Checker {
  std::function<void(Region, Leg&, std::optional<std::uint64_t>)> confirm;
  whole::Far far;
};

// Test-only (fault action `partialalias` at the step "whole-allocation sweep through glgpu"):
// a private GL buffer holding a copy of the shared one, which the sweep then uses from the
// middle of the allocation on, standing in for a GL import that shares only its first half.
// Returns 0 (no tail) when a GL call fails; the sweep then runs on the real buffer.
GLuint private_copy_for_test(const gles::EglContext& egl, GLuint shared, std::size_t size) {
  const gles::GlFns& gl = egl.gl();
  egl.take_error();
  GLuint copy = 0;
  gl.glGenBuffers(1, &copy);
  gl.glBindBuffer(GL_COPY_WRITE_BUFFER, copy);
  gl.glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(size), nullptr, GL_DYNAMIC_COPY);
  gl.glBindBuffer(GL_COPY_READ_BUFFER, shared);
  gl.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(size));
  gl.glFinish();
  if (egl.take_error() == GL_NO_ERROR) return copy;
  gl.glDeleteBuffers(1, &copy);
  return 0;
}

// The glgpu leg over the whole allocation (docs/probe.md, "The whole allocation").
void gl_whole_leg(ChildContext& ctx, const gles::EglContext& egl, GLuint shared, const Checker& check,
                  RouteReport& rep, Leg& glgpu) {
  if (!(glgpu.read_ok && glgpu.write_ok)) return;
  const std::size_t size = ctx.layout().size;
  const std::string step = fmt::format("whole-allocation sweep through {}", glgpu.name);
  GlPrivateTail tail;
  if (ctx.test_fault(step, "partialalias")) tail = {private_copy_for_test(egl, shared, size), size / 2};
  gl_whole(egl, [&](const std::string& s) { ctx.step(s); }, shared, size, check.far, glgpu, tail);
  if (tail.buffer != 0) egl.gl().glDeleteBuffers(1, &tail.buffer);
  if (glgpu.read_ok && glgpu.write_ok) rep.detail.push_back(whole_coverage_text(glgpu.name, size));
}

// Opens GL, walks the ladder, and runs both GL legs. `region` is F (same-proc) or D (cross-proc).
void run_gl_legs(ChildContext& ctx, int fd, const peer::SetupInfo& info, Region region, const Checker& check,
                 RouteReport& rep, Leg& glmap, Leg& glgpu, std::unique_ptr<GlSharedBuffer>& keep,
                 std::shared_ptr<gles::EglContext>& egl) {
  const Layout& layout = ctx.layout();
  glmap.attempted = true;
  ctx.step("create EGL context");
  auto created = drivers::egl_context();
  if (!created) {
    stop_row(rep.facts, created.error().kind, why_of(created.error()));
    return;
  }
  egl = std::move(*created);
  rep.detail.push_back(fmt::format("egl={} renderer=\"{}\"", egl->platform, egl->gl_renderer));
  for (const char* e : {"GL_EXT_memory_object", "GL_EXT_memory_object_fd"}) {
    if (!egl->has_extension(e)) {
      rep.facts.unsupported = std::string(e) + " not exposed by the GLES context";
      return;
    }
  }
  const std::string vk_uuid = info.device_uuid.value_or(std::string());
  rep.detail.push_back(fmt::format("uuid={}", gles::compare_uuid(egl->device_uuid().value_or(""), vk_uuid)));

  if (info.fd_size.value_or(std::uint64_t{0}) == 0)
    rep.detail.push_back("fdSize=unknown (fd not seekable): the 4 fd-size rungs are left out");
  ctx.step("GL import ladder (glImportMemoryFdEXT + glBufferStorageMemEXT)");
  GlImportResult imported = import_with_ladder(*egl, fd, layout.size, info.allocation_size.value_or(std::uint64_t{0}),
                                               info.fd_size.value_or(std::uint64_t{0}));
  rep.detail.push_back(imported.ladder.accepted_text());
  if (!imported.ladder.rejected.empty()) rep.detail.push_back(imported.ladder.ladder_text());
  std::string status = "gl-status=" + imported.status;
  if (!imported.map_error.empty()) status += " (" + imported.map_error + ")";
  if (imported.storage_flags >= 0) status += fmt::format(" GL_BUFFER_STORAGE_FLAGS=0x{:x}", imported.storage_flags);
  rep.detail.push_back(status);
  for (const std::string& note : imported.fd_notes) rep.detail.push_back(note);
  if (!imported.shared) {
    const RungOutcome& last = imported.ladder.rejected.back().second;
    for (Leg* leg : {&glmap, &glgpu}) {
      leg->attempted = true;
      leg->failed_step = last.step + " (every ladder rung)";
      leg->code = last.gl_error;
    }
    return;
  }
  keep = std::move(imported.shared);

  if (keep->map == nullptr) {
    glmap.failed_step = "glMapBufferRange(READ|WRITE|PERSISTENT|COHERENT)";
    glmap.code = imported.map_error;
  } else {
    std::span<std::byte> view(keep->map, layout.size);
    ctx.step("read region A through the GL mapping");
    read_local(view, layout, Region::A, glmap);
    ctx.step(fmt::format("write region {} through the GL mapping", region_name(region)));
    pattern::fill(layout.region(view, region), seed_of(region));
    ctx.step(fmt::format("exporter checks region {}", region_name(region)));
    check.confirm(region, glmap, std::nullopt);
  }
  ctx.step("GL GPU access (glCopyBufferSubData out and in, barrier, fence)");
  gl_gpu_access(*egl, keep->buffer, layout, Region::A, region, glgpu);
  if (glgpu.failed_step.empty()) {
    ctx.step(fmt::format("exporter checks region {} (GL GPU write)", region_name(region)));
    check.confirm(region, glgpu, gpu_seed_of(region));
  }
  gl_whole_leg(ctx, *egl, keep->buffer, check, rep, glgpu);
  if (glgpu.read_ok && glgpu.write_ok && measure::enabled()) {
    ctx.step("measure GL GPU copy bandwidth through glgpu");
    gl_copy_leg(*egl, glgpu.name, keep->buffer, layout.size);
  }
}

// The GL rows' ending, the shared soak tail: with --soak the GL GPU reads what the
// exporter wrote and writes `gpu_region`, the persistent mapping joining in only where
// the driver gave one that round-tripped; then the GL objects go, the buffer before its
// context and both before the report.
int finish_gl(ChildContext& ctx, DrivingHalf& half, std::unique_ptr<GlSharedBuffer>& shared,
              std::shared_ptr<gles::EglContext>& egl, const Leg& glmap, Region gpu_region, const OtherSide& other) {
  auto release = [&] {
    shared.reset();
    egl.reset();
  };
  if (!shared || !egl) return half.finish(release);
  const Layout& layout = ctx.layout();
  GpuRound round = [&](Region read, std::uint64_t read_seed, Region write, std::uint64_t write_seed) {
    return gl_gpu_round(*egl, shared->buffer, layout, read, read_seed, write, write_seed);
  };
  std::span<std::byte> local;
  if (shared->map != nullptr && glmap.read_ok && glmap.write_ok) local = std::span<std::byte>(shared->map, layout.size);
  return half.finish(SoakPlan{0, local, Region::C, Region::B, gpu_region, &round}, other, release);
}

int same_proc(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg glmap = map_leg();
  Leg glgpu = report_leg({kGlLegs, "glgpu"});
  DrivingHalf half(ctx, {&glmap, &glgpu}, Peer::none);
  RouteReport& rep = half.rep;
  auto exported = export_allocation(ctx, kOpaqueFd);
  if (auto* facts = std::get_if<RouteFacts>(&exported)) {
    rep.facts = *facts;
    return half.stop_before_start();
  }
  Exported& ex = std::get<Exported>(exported);
  std::span<std::byte> vk_view(ex.buffer.mapped, layout.size);
  whole::LocalFar vk_far(vk_view, whole::plan_for(layout.size));
  Checker local{[&](Region r, Leg& leg, std::optional<std::uint64_t> seed) { confirm_local(vk_view, layout, r, leg, seed); },
                vk_far.as_far()};
  std::shared_ptr<gles::EglContext> egl;
  std::unique_ptr<GlSharedBuffer> shared;
  run_gl_legs(ctx, ex.fd.get(), ex.info(), Region::F, local, rep, glmap, glgpu, shared, egl);
  if (shared && shared->map != nullptr && glmap.read_ok && glmap.write_ok) {
    ctx.step("zerocopy alias check, GL mapping against the Vulkan mapping");
    if (auto failure = local_alias_check(std::span<std::byte>(shared->map, layout.size), vk_view, layout.size)) {
      glmap.write_ok = false;
      glmap.failed_step = "zerocopy alias check";
      glmap.note += (glmap.note.empty() ? "" : " ") + *failure;
    }
  }
  return finish_gl(ctx, half, shared, egl, glmap, Region::F, local_side(vk_view, layout));
}

int cross_proc_client(ChildContext& ctx) {
  Leg glmap = map_leg();
  Leg glgpu = report_leg({kGlLegs, "glgpu"});
  DrivingHalf half(ctx, {&glmap, &glgpu});
  auto setup = half.start("the server's export");
  if (!setup) return half.finish();
  Checker remote{[&](Region r, Leg& leg, std::optional<std::uint64_t> seed) { confirm_remote(ctx, r, leg, seed); },
                 peer_far(ctx, ctx.layout().size)};
  std::shared_ptr<gles::EglContext> egl;
  std::unique_ptr<GlSharedBuffer> shared;
  run_gl_legs(ctx, setup->fd.get(), setup->info, Region::D, remote, half.rep, glmap, glgpu, shared, egl);
  if (shared && shared->map != nullptr) alias_leg(ctx, std::span<std::byte>(shared->map, ctx.layout().size), glmap);
  return finish_gl(ctx, half, shared, egl, glmap, Region::D, peer_side(ctx));
}

// The GL sweep's copies reach a private GL buffer from the middle of the allocation on: not OK.
constexpr std::string_view kPartialAliasBreaks =
    "the GL sweep's copies reach a private GL buffer from the middle of the allocation on: the row must not be OK";
constexpr FaultDef kSameProcFaults[] = {
    kCloseFdFault, {"partialalias", Role::server, "whole-allocation sweep through glgpu", kPartialAliasBreaks}};
constexpr FaultDef kCrossProcFaults[] = {
    kCloseFdFault, {"partialalias", Role::client, "whole-allocation sweep through glgpu", kPartialAliasBreaks}};

const RouteDef kT1GlesSameProc{
    .row = "T1-gles-memobj-fd-same-proc",
    .group = "gles",
    .needs = {.extensions = needs::kFdMemory, .handle_types = needs::kOpaqueFdExportable, .gl = true},
    .legs = kGlLegs,
    .faults = kSameProcFaults,
    .memory_types = MemoryTypes::exporter_picks,
    .server = {"exports Vulkan memory and imports a dup of its own fd into GLES", same_proc, true},
    .client = {}};
const RouteDef kT1GlesCrossProc{
    .row = "T1-gles-memobj-fd-cross-proc",
    .group = "gles",
    .needs = {.extensions = needs::kFdMemory, .handle_types = needs::kOpaqueFdExportable, .gl = true},
    .legs = kGlLegs,
    .faults = kCrossProcFaults,
    .memory_types = MemoryTypes::exporter_picks,
    .server = {"allocates Vulkan memory, exports an opaque fd, serves",
               [](ChildContext& c) { return export_and_serve(c, kOpaqueFd); }},
    .client = {"imports the fd into GLES, drives", cross_proc_client, true},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1GlesSameProc, 60);
EXTMEM_ROUTE(kT1GlesCrossProc, 70);

}  // namespace extmem::probe
