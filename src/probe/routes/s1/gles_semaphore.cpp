// S1-gles-semaphore: GL_EXT_semaphore_fd across processes (opaque fds only).
// The Vulkan server (s1/vk_side.h) exports the T1 allocation and binary
// semaphores; this client imports the allocation into GL (the T1-gles ladder)
// and runs the ordering proof (probe/sync_proof.h) twice:
//   glwait    the Vulkan side's held write + signal; GL imports the semaphore,
//             glWaitSemaphoreEXT on the shared buffer, then glCopyBufferSubData
//             of region E out and a marker after it
//   glsignal  GL writes region E and glSignalSemaphoreEXT a semaphore the Vulkan
//             side exported, releasing its GPU wait; GL's write is itself held
//             behind a Vulkan gate signal (glWaitSemaphoreEXT), whose host
//             release is the proof's "release". The GL signal is submitted
//             (glFlush) before the Vulkan wait, as a binary semaphore needs
//             (VUID-vkQueueSubmit-pWaitSemaphores-03238).
// docs/probe.md, "S1".
#include <algorithm>
#include <cstring>
#include <utility>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/clock.h"
#include "probe/routes.h"
#include "probe/routes/gles/semaphore.h"
#include "probe/routes/gles/import.h"
#include "probe/routes/s1/peer.h"
#include "probe/routes/s1/vk_side.h"
#include "probe/routes/s1/wake.h"
#include "probe/sync_proof.h"
#include "probe/worker/drivers.h"
#include "probe/worker/half_end.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"glwait", true, "GL's glWaitSemaphoreEXT on a Vulkan binary semaphore from another process held its copy until the signal"},
    {"glsignal", true, "GL's glSignalSemaphoreEXT released a Vulkan wait in the other process, after GL's write"},
};

using gles::EglContext;

// The GL_EXT_semaphore helpers this row shares with the T4 GL image rows.
using glsem::gl_check;
using glsem::gl_error;
using glsem::GlSemaphore;
using glsem::import_semaphore;

// A GL object deleted with its owner's call.
struct GlBuffer {
  const EglContext& gl;
  GLuint id = 0;
  std::byte* map = nullptr;
  bool leaked = false;
  ~GlBuffer() {
    if (id == 0 || leaked) return;
    if (map != nullptr) {
      gl.gl().glBindBuffer(GL_COPY_WRITE_BUFFER, id);
      (void)gl.gl().glUnmapBuffer(GL_COPY_WRITE_BUFFER);
    }
    gl.gl().glDeleteBuffers(1, &id);
  }
};
struct GlSync {
  const EglContext& gl;
  GLsync sync = nullptr;
  ~GlSync() {
    if (sync != nullptr) gl.gl().glDeleteSync(sync);
  }
};

// A buffer of `bytes` with `init`, stored with glBufferStorageEXT and mapped
// READ | PERSISTENT | COHERENT when `mapped`, so the host can look at it while GL work is pending.
Status make_buffer(const EglContext& gl, GlBuffer& b, std::span<const std::byte> init, bool mapped, const char* what) {
  const auto& f = gl.gl();
  f.glGenBuffers(1, &b.id);
  f.glBindBuffer(GL_COPY_WRITE_BUFFER, b.id);
  const GLbitfield flags = mapped ? (GL_MAP_READ_BIT | GL_MAP_PERSISTENT_BIT_EXT | GL_MAP_COHERENT_BIT_EXT) : 0;
  f.glBufferStorageEXT(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(init.size()), init.data(), flags);
  if (auto s = gl_check(gl, fmt::format("glBufferStorageEXT({})", what)); !s) return s;
  if (mapped) {
    b.map = static_cast<std::byte*>(f.glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(init.size()), flags));
    if (auto s = gl_check(gl, fmt::format("glMapBufferRange({}, READ|PERSISTENT|COHERENT)", what)); !s) return s;
    if (b.map == nullptr) return Error{fmt::format("glMapBufferRange({})", what), ErrorKind::driver, "NULL", {}};
  }
  return {};
}

// GL's client wait for at most `ns` nanoseconds: signalled or timed out.
Result<sync::Waited> client_wait(const EglContext& gl, GLsync sync, std::uint64_t ns) {
  if (sync == nullptr) return Error{"glClientWaitSync", ErrorKind::protocol, {}, "no fence (not armed)"};
  GLenum r = gl.gl().glClientWaitSync(sync, GL_SYNC_FLUSH_COMMANDS_BIT, ns);
  if (r == GL_ALREADY_SIGNALED || r == GL_CONDITION_SATISFIED)
    return sync::Waited{sync::WaitResult::signalled, r == GL_ALREADY_SIGNALED ? "GL_ALREADY_SIGNALED" : "GL_CONDITION_SATISFIED"};
  if (r == GL_TIMEOUT_EXPIRED) return sync::Waited{sync::WaitResult::timed_out, "GL_TIMEOUT_EXPIRED"};
  return gl_error("glClientWaitSync", gl.take_error());
}

// GL waits, the Vulkan peer produces (glwait).
class GlConsumer final : public sync::OrderingSubject {
 public:
  /// `zero_word`: a GL buffer of 4 zero bytes, which clears the marker after the calibration.
  GlConsumer(ChildContext& ctx, const EglContext& gl, GLuint shared, GlBuffer& copy, GLuint marker, GLuint zero_word)
      : ctx_(ctx), gl_(gl), shared_(shared), copy_(copy), marker_(marker), zero_word_(zero_word), sem_{gl}, fence_{gl} {}

  Status hold() override {
    os::UniqueFd fd;
    auto r = s1::ask(ctx_, s1::Hold{.kind = s1::key_of(vksync::kBinaryOpaque)}, &fd);
    if (!r) {
      if (r.error().kind == ErrorKind::unsupported) unsupported = r.error().detail;
      return std::move(r).error();
    }
    if (!fd.valid()) return Error{"receive the semaphore fd", ErrorKind::protocol, {}, "the hold reply carried no fd"};
    return import_semaphore(ctx_, gl_, sem_, fd.get(), fd_text);
  }

  Result<sync::Waited> ungated_copy(std::chrono::milliseconds bound) override {
    ctx_.step("glCopyBufferSubData(region E) + marker + glFenceSync, no wait");
    if (auto s = submit(false); !s) return std::move(s).error();
    auto w = wait_consumer(bound);
    if (!w || w->result != sync::WaitResult::signalled) return w;
    // The copy buffer is mapped for reading only: GL clears the marker, so arm() starts without one.
    const auto& f = gl_.gl();
    f.glBindBuffer(GL_COPY_READ_BUFFER, zero_word_);
    f.glBindBuffer(GL_COPY_WRITE_BUFFER, copy_.id);
    f.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, kRegionSize, 4);
    if (auto s = gl_check(gl_, "glCopyBufferSubData(clear the marker)"); !s) return std::move(s).error();
    if (auto s = fence(); !s) return std::move(s).error();
    return wait_consumer(bound);
  }

  Status arm() override {
    ctx_.step("glWaitSemaphoreEXT(shared buffer) + glCopyBufferSubData(region E) + marker + glFenceSync");
    return submit(true);
  }

  // The consumer's work: (the semaphore wait,) region E and the marker copied, a fence.
  Status submit(bool wait_on_semaphore) {
    const auto& f = gl_.gl();
    const Layout& layout = ctx_.layout();
    armed_ = true;
    if (wait_on_semaphore) {
      f.glWaitSemaphoreEXT(sem_.id, 1, &shared_, 0, nullptr, nullptr);
      if (auto s = gl_check(gl_, "glWaitSemaphoreEXT"); !s) return s;
    }
    f.glBindBuffer(GL_COPY_READ_BUFFER, shared_);
    f.glBindBuffer(GL_COPY_WRITE_BUFFER, copy_.id);
    f.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(layout.offset(s1::kRegion)), 0,
                          kRegionSize);
    f.glBindBuffer(GL_COPY_READ_BUFFER, marker_);
    f.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, kRegionSize, 4);
    if (auto s = gl_check(gl_, "glCopyBufferSubData(region E, marker)"); !s) return s;
    return fence();
  }

  // Makes the copies visible to the mapping and fences them (replacing an earlier fence), flushed.
  Status fence() {
    const auto& f = gl_.gl();
    f.glMemoryBarrier(GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT_EXT);
    if (fence_.sync != nullptr) f.glDeleteSync(std::exchange(fence_.sync, nullptr));
    fence_.sync = f.glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    if (auto s = gl_check(gl_, "glFenceSync"); !s) return s;
    f.glFlush();
    return gl_check(gl_, "glFlush");
  }

  Result<sync::Observation> observe() override {
    sync::Observation o;
    if (fence_.sync != nullptr) {
      GLenum r = gl_.gl().glClientWaitSync(fence_.sync, 0, 0);
      if (r == GL_WAIT_FAILED) return gl_error("glClientWaitSync(0)", gl_.take_error());
      o.fence_signalled = r == GL_ALREADY_SIGNALED || r == GL_CONDITION_SATISFIED;
    }
    std::uint32_t m = 0;
    std::memcpy(&m, copy_.map + kRegionSize, sizeof m);
    o.marker_present = m == s1::kMarker;
    return o;  // GL cannot read a semaphore's state: no counter
  }

  Result<sync::Waited> wait_consumer(std::chrono::milliseconds bound) override {
    return client_wait(gl_, fence_.sync, static_cast<std::uint64_t>(bound.count()) * 1'000'000ull);
  }

  Status release() override { return s1::release_producer(ctx_); }

  Result<sync::CopyCheck> check_copy() override { return s1::check_producer_copy(copy_.map); }

  bool drain() override {
    auto r = s1::ask(ctx_, s1::Drain{});
    bool ok = r && r->drained;
    if (armed_) {
      auto w = client_wait(gl_, fence_.sync, s1::kDrainNs);
      if (!w || w->result != sync::WaitResult::signalled) ok = false;
    }
    if (!ok) sem_.leaked = true;  // GL may still wait on it
    return ok;
  }

  std::optional<std::string> unsupported;
  std::string fd_text;

 private:
  ChildContext& ctx_;
  const EglContext& gl_;
  GLuint shared_;
  GlBuffer& copy_;
  GLuint marker_;
  GLuint zero_word_;
  GlSemaphore sem_;
  GlSync fence_;
  bool armed_ = false;
};

// --measure, after the glwait proof: rounds of the Vulkan producer's write
// ending on its GPU (the server's BOTTOM_OF_PIPE timestamp on CLOCK_MONOTONIC,
// VK_EXT_calibrated_timestamps: "gpu_t" of its drain reply) to GL's work
// getting past glWaitSemaphoreEXT. GL has no clock another process can compare
// with (GL_TIMESTAMP is read through the command stream), so GL's first
// command after the wait copies a round number into a READ | PERSISTENT |
// COHERENT mapped buffer, and a host thread spinning on that word stamps its
// arrival with CLOCK_MONOTONIC: late by the write's path to the host and one
// poll, never early. Against it, the host relay: ping-gpu (the same write with
// no semaphore, its fence seen by the server's host, a message), then the same
// copy submitted here. Route figures semaphore_gpu_wake_us / socket_gpu_wake_us.
class GlWakeTimer {
 public:
  GlWakeTimer(ChildContext& ctx, const EglContext& gl, GLuint shared) : ctx_(ctx), gl_(gl), shared_(shared) {}

  void run() {
    const unsigned rounds = measure::repeats();
    std::vector<std::uint32_t> values(2 * rounds + 2);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::uint32_t>(i + 1);
    std::vector<std::byte> zeros(256);
    ctx_.step("measure: create the GL wake word (mapped) and its values");
    (void)gl_.take_error();
    Status made = make_buffer(gl_, watch_, zeros, true, "wake word");
    if (made) made = make_buffer(gl_, values_, std::as_bytes(std::span(values)), false, "wake values");
    if (!made) return fallback(why_of(made.error()));
    std::vector<double> sem_us, socket_us;
    std::uint64_t deviation = 0;
    for (unsigned i = 0; i < rounds; ++i) {
      const std::uint32_t v = 2 * i + 1;
      ctx_.step(fmt::format("measure signal-to-wake (GL waits), round {}", i + 1));
      os::UniqueFd fd;
      std::string fd_text;
      GlSemaphore sem{gl_};
      auto held = s1::ask(ctx_, s1::Hold{.kind = s1::key_of(vksync::kBinaryOpaque), .time = true}, &fd);
      if (!held || !fd.valid() || !import_semaphore(ctx_, gl_, sem, fd.get(), fd_text)) return drain_peer();
      gl_.gl().glWaitSemaphoreEXT(sem.id, 1, &shared_, 0, nullptr, nullptr);
      if (!copy_value(v)) return drain_peer();
      double seen = 0;
      std::thread spinner([&] { seen = spin_until(v); });
      auto released = s1::ask(ctx_, s1::Release{});
      spinner.join();
      auto d = s1::ask(ctx_, s1::Drain{});
      gl_.gl().glFinish();
      if (!released || seen == 0 || !d || !d->drained) {
        sem.leaked = true;
        return fallback("signal-to-wake round " + std::to_string(i + 1) + " did not complete");
      }
      if (!d->gpu.gpu_t) return fallback("producer: " + d->gpu.gpu_error.value_or("no GPU time"));
      sem_us.push_back((seen - *d->gpu.gpu_t) * 1e6);
      deviation = std::max(deviation, d->gpu.max_deviation_ns);

      ctx_.step(fmt::format("measure GPU write, host relay, GL start, round {}", i + 1));
      auto pg = s1::ask(ctx_, s1::PingGpu{});
      if (!pg || !pg->gpu.gpu_t) return fallback("producer: ping-gpu gave no GPU time");
      if (!copy_value(v + 1)) return;
      const double relayed = spin_until(v + 1);
      gl_.gl().glFinish();
      if (relayed == 0) return fallback("host-relay round " + std::to_string(i + 1) + " did not complete");
      socket_us.push_back((relayed - *pg->gpu.gpu_t) * 1e6);
    }
    s1::report_gpu_wake("vk-calibrated-timestamp to gl-host-observed-write", std::move(sem_us), std::move(socket_us),
                        deviation);
  }

 private:
  // Copies value v (values_[v - 1]) into the wake word, then flushes so GL submits it.
  bool copy_value(std::uint32_t v) {
    const auto& f = gl_.gl();
    f.glBindBuffer(GL_COPY_READ_BUFFER, values_.id);
    f.glBindBuffer(GL_COPY_WRITE_BUFFER, watch_.id);
    f.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>((v - 1) * 4), 0, 4);
    f.glFlush();
    if (auto s = gl_check(gl_, "glCopyBufferSubData(wake word) + glFlush"); !s) {
      fallback(why_of(s.error()));
      return false;
    }
    return true;
  }
  double spin_until(std::uint32_t v) const { return s1::wake_word_seen(watch_.map, v); }
  void drain_peer() {
    (void)s1::ask(ctx_, s1::Drain{});
    gl_.gl().glFinish();
    fallback("a measure round could not be set up");
  }
  void fallback(std::string why) { s1::gpu_wake_fallback(ctx_, std::move(why)); }
  ChildContext& ctx_;
  const EglContext& gl_;
  GLuint shared_;
  GlBuffer watch_{gl_}, values_{gl_};
};

// GL's buffers of the proofs: the consumer's copy target, the marker, the
// producer's data and the stale pattern, and a zero word.
struct GlProofBuffers {
  explicit GlProofBuffers(const EglContext& gl) : copy{gl}, marker{gl}, producer_data{gl}, stale_data{gl}, zero_word{gl} {}
  GlBuffer copy, marker, producer_data, stale_data, zero_word;
  /// Pending GL work may still use them (see VkWaiter's destructor): never deleted.
  void leak() { copy.leaked = marker.leaked = producer_data.leaked = stale_data.leaked = true; }
};

Status make_proof_buffers(ChildContext& ctx, const EglContext& gl, GlProofBuffers& b) {
  std::vector<std::byte> zeros(kRegionSize + 256), marker_bytes(4), data(kRegionSize), stale(kRegionSize);
  std::memcpy(marker_bytes.data(), &s1::kMarker, 4);
  pattern::fill(data, s1::kProducerSeed);
  pattern::fill(stale, s1::kStaleSeed);
  ctx.step("create the GL copy, marker and producer buffers");
  (void)gl.take_error();  // the ladder's refused rungs leave errors that are not ours
  Status made = make_buffer(gl, b.copy, zeros, true, "copy");
  if (made) made = make_buffer(gl, b.marker, marker_bytes, false, "marker");
  if (made) made = make_buffer(gl, b.producer_data, data, false, "producer data");
  if (made) made = make_buffer(gl, b.stale_data, stale, false, "stale data");
  if (made) made = make_buffer(gl, b.zero_word, std::span(zeros).first(4), false, "zero word");
  return made;
}

// glwait: the Vulkan side produces, GL's consumer waits on the imported
// semaphore. Returns whether the proof drained (undrained work still uses the buffers).
bool glwait_leg(ChildContext& ctx, const EglContext& gl, GLuint shared, GlProofBuffers& b, RouteReport& rep,
                Leg& glwait) {
  GlConsumer subject(ctx, gl, shared, b.copy, b.marker.id, b.zero_word.id);
  sync::ProofOutcome o = sync::prove_ordering(subject, s1::proof_config(), s1::step_sink, &ctx);
  s1::record_proof(o, glwait, rep.facts);
  if (subject.unsupported) rep.facts.unsupported = *subject.unsupported;
  // GL's import replaces the semaphore's payload for good (permanent); OPAQUE_FD: by reference.
  rep.detail.push_back(fmt::format("glwait: {} import=permanent transference=reference semaphore {}",
                                   s1::proof_detail(o, false, 0),
                                   subject.fd_text.empty() ? "fd-consumed=notrun" : subject.fd_text));
  if (measure::enabled() && o.drained && !subject.unsupported) GlWakeTimer(ctx, gl, shared).run();
  return o.drained;
}

// glsignal: GL produces behind a Vulkan gate, the Vulkan side waits. Returns
// whether the proof drained; when not, GL's semaphores are never deleted.
bool glsignal_leg(ChildContext& ctx, const EglContext& gl, GLuint shared, const GlProofBuffers& b, RouteReport& rep,
                  Leg& glsignal) {
  const Layout& layout = ctx.layout();
  bool keep = false;
  const auto& f = gl.gl();
  GlSemaphore gate{gl}, signal{gl};
  std::string gate_text, signal_text;
  bool gl_submitted = false;
  s1::PeerVkWaiter::Producer ops{
      .hold =
          [&]() -> Status {
            // GL's write of E, held behind a bare Vulkan gate signal.
            os::UniqueFd fd;
            auto r = s1::ask(ctx, s1::Hold{.kind = s1::key_of(vksync::kBinaryOpaque), .write = false}, &fd);
            if (!r) return std::move(r).error();
            if (!fd.valid()) return Error{"receive the gate's fd", ErrorKind::protocol, {}, "no fd with the reply"};
            if (auto s = import_semaphore(ctx, gl, gate, fd.get(), gate_text); !s) return s;
            ctx.step("glCopyBufferSubData(stale pattern -> region E) + glFinish");
            f.glBindBuffer(GL_COPY_READ_BUFFER, b.stale_data.id);
            f.glBindBuffer(GL_COPY_WRITE_BUFFER, shared);
            f.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0,
                                  static_cast<GLintptr>(layout.offset(s1::kRegion)), kRegionSize);
            f.glFinish();
            if (auto s = gl_check(gl, "glCopyBufferSubData(stale pattern)"); !s) return s;
            ctx.step("glWaitSemaphoreEXT(gate) + glCopyBufferSubData(region E) + glSignalSemaphoreEXT + glFlush");
            f.glWaitSemaphoreEXT(gate.id, 1, &shared, 0, nullptr, nullptr);
            f.glBindBuffer(GL_COPY_READ_BUFFER, b.producer_data.id);
            f.glBindBuffer(GL_COPY_WRITE_BUFFER, shared);
            f.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0,
                                  static_cast<GLintptr>(layout.offset(s1::kRegion)), kRegionSize);
            f.glSignalSemaphoreEXT(signal.id, 1, &shared, 0, nullptr, nullptr);
            f.glFlush();
            if (auto s = gl_check(gl, "glWaitSemaphoreEXT / glSignalSemaphoreEXT"); !s) return s;
            gl_submitted = true;
            return {};
          },
      .write_and_signal =
          [&]() -> Status {
            auto r = s1::ask(ctx, s1::Release{});  // the Vulkan host signals the gate
            if (!r) return std::move(r).error();
            return {};
          },
      .drain = [&] { return true; },  // GL's part finishes with the gate; the peer's drain covers it
  };
  s1::PeerVkWaiter subject(ctx, ops);
  auto fd = subject.prepare(vksync::kBinaryOpaque);
  Status ready = fd ? import_semaphore(ctx, gl, signal, fd->get(), signal_text) : Status{fd.error()};
  if (!ready) {
    fail_leg(glsignal, ready.error());
    if (!fd && fd.error().kind == ErrorKind::unsupported) rep.facts.unsupported = fd.error().detail;
  } else {
    sync::ProofOutcome o = sync::prove_ordering(subject, s1::proof_config(), s1::step_sink, &ctx);
    s1::record_proof(o, glsignal, rep.facts);
    if (gl_submitted && o.drained) {  // undrained, GL's wait may never end: no glFinish then
      ctx.step("glFinish (GL's held write + signal)");
      f.glFinish();
    }
    keep = keep || !o.drained;
    rep.detail.push_back(fmt::format("glsignal: {} import=permanent transference=reference gate {} signal {}",
                                     s1::proof_detail(o, false, 0),
                                     gate_text.empty() ? "fd-consumed=notrun" : gate_text,
                                     signal_text.empty() ? "fd-consumed=notrun" : signal_text));
  }
  if (keep) gate.leaked = signal.leaked = true;
  return !keep;
}

int gl_client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg glwait = report_leg({kLegs, "glwait"});
  Leg glsignal = report_leg({kLegs, "glsignal"});
  DrivingHalf half(ctx, {&glwait, &glsignal});
  RouteReport& rep = half.rep;
  auto setup = half.start("the Vulkan side's allocation");
  if (!setup) return half.finish();
  auto egl = drivers::egl_context();
  if (!egl) {
    stop_row(rep.facts, egl.error().kind, "client: " + why_of(egl.error()));
    return half.finish();
  }
  const EglContext& gl = **egl;
  for (const char* e : {"GL_EXT_memory_object_fd", "GL_EXT_semaphore_fd", "GL_EXT_buffer_storage"}) {
    if (!gl.has_extension(e)) {
      rep.facts.unsupported = fmt::format("{} not exposed by the GL context ({})", e, gl.gl_renderer);
      return half.finish();
    }
  }
  const auto alloc_size = setup->info.allocation_size.value_or(std::uint64_t{0});
  const auto fd_size = setup->info.fd_size.value_or(std::uint64_t{0});
  ctx.step("import the allocation into GL (T1-gles ladder)");
  GlImportResult imported = import_with_ladder(gl, setup->fd.get(), layout.size, alloc_size, fd_size);
  for (const std::string& n : imported.fd_notes) rep.detail.push_back("memory " + n);
  if (!imported.shared) {
    rep.facts.fatal = "client: GL import of the allocation: " + imported.status;
    return half.finish();
  }
  const GLuint shared = imported.shared->buffer;
  GlProofBuffers buffers{gl};
  if (Status made = make_proof_buffers(ctx, gl, buffers); !made) {
    rep.facts.fatal = "client: " + why_of(made.error());
    rep.facts.stop_kind = made.error().kind;
    return half.finish();
  }
  // Work that could not drain still uses the GL objects: they are kept then.
  const bool drained = glwait_leg(ctx, gl, shared, buffers, rep, glwait) &&
                       glsignal_leg(ctx, gl, shared, buffers, rep, glsignal);
  if (!drained) {
    buffers.leak();
    (void)imported.shared.release();
  }
  return half.finish();
}

constexpr const vksync::SemaphoreKind* kKinds[] = {&vksync::kBinaryOpaque};

constexpr FaultDef kFaults[] = {kCloseFdFault, s1::kNoSignalFault};

const RouteDef kS1GlesSemaphore{
    .row = "S1-gles-semaphore",
    .group = "s1",
    .needs = {.extensions = needs::kFdMemoryAndSemaphores, .handle_types = needs::kOpaqueFdExportable, .gl = true},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"exports the T1 allocation and binary semaphores; produces for GL's wait, waits for GL's signal",
               [](ChildContext& c) { return s1::vk_side_serve(c, kKinds); }},
    .client = {"imports them into GLES; waits before a copy, writes and signals; drives the ordering proofs",
               gl_client, true},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kS1GlesSemaphore, 260);

}  // namespace extmem::probe
