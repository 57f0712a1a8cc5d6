#include "probe/routes/s1/vk_side.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/clock.h"
#include "probe/routes/s1/peer.h"
#include "probe/routes/vk/export.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe::s1 {

using nlohmann::json;
using vksync::SemaphoreKind;

namespace {
namespace EXTMEM_ROUTE_FILE {
struct Keyed {
  const char* key;
  const SemaphoreKind* kind;
};
constexpr Keyed kKinds[] = {{"binary-opaque", &vksync::kBinaryOpaque},
                            {"timeline-opaque", &vksync::kTimelineOpaque},
                            {"binary-sync-fd", &vksync::kBinarySyncFd}};
}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

const SemaphoreKind* kind_by_key(std::string_view key) {
  for (const Keyed& k : kKinds)
    if (key == k.key) return k.kind;
  return nullptr;
}

const char* key_of(const SemaphoreKind& kind) {
  for (const Keyed& k : kKinds)
    if (k.kind == &kind) return k.key;
  return "?";
}

// ------------------------------------------------------------------ waiter --

Result<std::unique_ptr<VkWaiter>> VkWaiter::create(vksync::SyncDevice& sd, VkBuffer shared, VkDeviceSize off) {
  std::unique_ptr<VkWaiter> w(new VkWaiter(sd, shared, off));
  vk::AllocationRequest req;
  req.size = kRegionSize + 256;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto copy = sd.device().create_buffer(req);
  if (!copy) {
    Error e = std::move(copy).error();
    e.step = "create the waiter's private copy buffer: " + e.step;
    return e;
  }
  w->copy_ = std::move(*copy);
  std::memset(w->copy_.mapped, 0, req.size);
  return w;
}

VkWaiter::~VkWaiter() {
  if (leaked_) {
    // Work may still use these: destroying them under the GPU is undefined, a
    // leak is not. The worker's hygiene check then counts the buffer, which is
    // the truth: this process holds GPU work it could not finish.
    (void)new vk::Buffer(std::move(copy_));
    sem_.leak();
    fence_.leak();
  }
}

Status VkWaiter::arm(bool wait_on_semaphore) {
  const vk::Device& d = sd_.device();
  auto cmd = vksync::record(sd_, [&](VkCommandBuffer c) {
    vksync::barrier(d, c, shared_, off_, kRegionSize, 0, VK_ACCESS_TRANSFER_READ_BIT, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                    VK_PIPELINE_STAGE_TRANSFER_BIT, VK_QUEUE_FAMILY_EXTERNAL, d.queue_family());
    if (start_) start_->write(c, VK_PIPELINE_STAGE_TRANSFER_BIT);
    VkBufferCopy region{off_, 0, kRegionSize};
    d.fn().vkCmdCopyBuffer(c, shared_, copy_.buffer, 1, &region);
    // The marker is written after the copy and made visible with it.
    vksync::barrier(d, c, copy_.buffer, 0, VK_WHOLE_SIZE, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                    VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
    sd_.fn().vkCmdFillBuffer(c, copy_.buffer, kRegionSize, 4, kMarker);
    vksync::barrier(d, c, copy_.buffer, 0, VK_WHOLE_SIZE, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT,
                    VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT);
  });
  if (!cmd) return std::move(cmd).error();
  auto fence = vksync::create_fence(sd_);
  if (!fence) return std::move(fence).error();
  fence_ = std::move(*fence);
  vksync::Submit s{*cmd, wait_on_semaphore ? sem_.get() : VK_NULL_HANDLE, kTimelineValue,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_NULL_HANDLE, 0, fence_.get()};
  if (auto st = vksync::submit(sd_, s, "waiter: wait + copy + marker"); !st) return st;
  armed_ = true;
  return {};
}

Result<sync::Waited> VkWaiter::ungated(std::chrono::milliseconds bound) {
  if (auto st = arm(false); !st) return std::move(st).error();
  auto w = wait(bound);
  if (w && w->result == sync::WaitResult::signalled) std::memset(copy_.mapped, 0, kRegionSize + sizeof kMarker);
  return w;
}

Result<sync::Observation> VkWaiter::observe() {
  sync::Observation o;
  if (fence_.get() != VK_NULL_HANDLE) {
    VkResult r = sd_.fn().vkGetFenceStatus(sd_.device().handle(), fence_.get());
    if (r != VK_SUCCESS && r != VK_NOT_READY) return vk::vk_error("vkGetFenceStatus(waiter)", r);
    o.fence_signalled = r == VK_SUCCESS;
  }
  std::uint32_t m = 0;
  std::memcpy(&m, copy_.mapped + kRegionSize, sizeof m);
  o.marker_present = m == kMarker;
  if (type_ == VK_SEMAPHORE_TYPE_TIMELINE && sem_.get() != VK_NULL_HANDLE) {
    std::uint64_t v = 0;
    VkResult r = sd_.fn().vkGetSemaphoreCounterValueKHR(sd_.device().handle(), sem_.get(), &v);
    if (r != VK_SUCCESS) return vk::vk_error("vkGetSemaphoreCounterValueKHR(waited semaphore)", r);
    o.counter = sync::TimelineValue{v};
  }
  return o;
}

Result<sync::Waited> VkWaiter::wait(std::chrono::milliseconds bound) {
  if (fence_.get() == VK_NULL_HANDLE) return Error{"vkWaitForFences(waiter)", ErrorKind::protocol, {}, "not armed"};
  auto w = vksync::wait_fence(sd_, fence_, static_cast<std::uint64_t>(bound.count()) * 1'000'000ull, "waiter");
  if (!w) return std::move(w).error();
  return sync::Waited{*w ? sync::WaitResult::signalled : sync::WaitResult::timed_out, *w ? "VK_SUCCESS" : "VK_TIMEOUT"};
}

sync::CopyCheck VkWaiter::check(std::uint64_t seed) const {
  std::span<const std::byte> got(copy_.mapped, kRegionSize);
  return sync::CopyCheck{pattern::count_stale_words(got, seed), kRegionSize / 4, pattern::first_mismatch(got, seed)};
}

Status VkWaiter::time_start() {
  if (start_) return {};
  auto slot = vk::TimestampSlot::create(sd_.device());
  if (!slot) return std::move(slot).error();
  start_.emplace(std::move(*slot));
  return {};
}

Result<double> VkWaiter::started_at(const vk::HostClock& clock) const {
  if (!start_) return Error{"waiter start time", ErrorKind::protocol, {}, "time_start() was not called"};
  auto t = start_->ticks();
  if (!t) return std::move(t).error();
  return clock.host_seconds(*t);
}

bool VkWaiter::drain() {
  if (!armed_) return true;
  auto w = vksync::wait_fence(sd_, fence_, kDrainNs, "waiter drain");
  const bool ok = w && *w;
  if (!ok) leaked_ = true;
  return ok;
}

// ---------------------------------------------------------- producer round --

namespace {
namespace EXTMEM_ROUTE_FILE {

RouteFacts server_facts(const Error& e) {
  RouteFacts f;
  stop_row(f, e.kind, "server: " + why_of(e));
  return f;
}

std::string kind_text(const SemaphoreKind& k) { return fmt::format("{} {}", k.type_name, k.handle_name); }

// One produced signal: the exported semaphore, (binary) the host-held gate,
// the recorded write and its fence.
struct Round {
  const SemaphoreKind* kind = nullptr;
  vksync::Semaphore shared;
  vksync::Semaphore gate;
  vksync::Fence fence;
  VkCommandBuffer write = VK_NULL_HANDLE;
  bool submitted = false, released = false, leaked = false;
  bool timed = false;  // --measure: `write` ends with a timestamp in Server::end_slot
  ~Round() {
    if (leaked) {
      shared.leak();
      gate.leak();
      fence.leak();
    }
  }
};

struct Server {
  ChildContext& ctx;
  Exported ex;
  std::unique_ptr<vksync::SyncDevice> sd;
  vk::Buffer staging;  // kProducerSeed's pattern, copied into E by the GPU
  std::unique_ptr<Round> round;
  std::unique_ptr<VkWaiter> waiter;
  // --measure: the producer write's end on the GPU, and the last timed round's result for the drain reply.
  std::optional<vk::TimestampSlot> end_slot;
  std::optional<GpuEnd> gpu_time;

  VkDeviceSize offset() const { return ctx.layout().offset(kRegion); }
  std::span<std::byte> region() const {
    return ctx.layout().region(std::span<std::byte>(ex.buffer.mapped, ctx.layout().size), kRegion);
  }

  // `timed`: a timestamp at BOTTOM_OF_PIPE after the write, the last thing before the signal.
  Result<VkCommandBuffer> record_write(bool timed = false) {
    const vk::Device& d = *ex.device;
    return vksync::record(*sd, [&](VkCommandBuffer c) {
      VkBufferCopy r{0, offset(), kRegionSize};
      d.fn().vkCmdCopyBuffer(c, staging.buffer, ex.buffer.buffer, 1, &r);
      // Release to the other device (queue family ownership transfer of external memory).
      vksync::barrier(d, c, ex.buffer.buffer, offset(), kRegionSize, VK_ACCESS_TRANSFER_WRITE_BIT, 0,
                      VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d.queue_family(),
                      VK_QUEUE_FAMILY_EXTERNAL);
      if (timed) end_slot->write(c, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
    });
  }

  // --measure: makes end_slot; false (and gpu_time holds the reason) when the device has no timestamps.
  bool ensure_end_slot() {
    if (end_slot) return true;
    auto slot = vk::TimestampSlot::create(*ex.device);
    if (!slot) {
      gpu_time = GpuEnd{.gpu_error = why_of(slot.error())};
      return false;
    }
    end_slot.emplace(std::move(*slot));
    return true;
  }

  // The timed write's end on the host clock, or why there is none.
  GpuEnd read_end_time() {
    auto ticks = end_slot->ticks();
    if (!ticks) return GpuEnd{.gpu_error = why_of(ticks.error())};
    auto clock = vk::HostClock::calibrate(*ex.device);
    if (!clock) return GpuEnd{.gpu_error = why_of(clock.error())};
    return GpuEnd{.gpu_t = clock->host_seconds(*ticks), .max_deviation_ns = clock->max_deviation_ns()};
  }

  // ping-gpu: the same write with no semaphore, waited for on the host, as a CPU-relayed handoff would be.
  Result<PingGpuReply> ping_gpu() {
    if (!drain_round()) return Error{"ping-gpu", ErrorKind::timeout, {}, "the previous round did not drain"};
    if (!ensure_end_slot()) return PingGpuReply{.gpu = std::exchange(gpu_time, std::nullopt).value_or(GpuEnd{})};
    auto cmd = record_write(true);
    if (!cmd) return std::move(cmd).error();
    auto fence = vksync::create_fence(*sd);
    if (!fence) return std::move(fence).error();
    vksync::Submit s{*cmd, VK_NULL_HANDLE, 0, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_NULL_HANDLE, 0, fence->get()};
    if (auto st = vksync::submit(*sd, s, "producer write (ping-gpu)"); !st) return std::move(st).error();
    auto done = vksync::wait_fence(*sd, *fence, kDrainNs, "producer write (ping-gpu)");
    const double t = os::monotonic_seconds();
    if (!done || !*done) {
      fence->leak();
      return Error{"vkWaitForFences(producer write, ping-gpu)", ErrorKind::timeout, {}, "did not complete"};
    }
    return PingGpuReply{.t = t, .gpu = read_end_time()};
  }

  bool drain_round() {
    if (!round) return true;
    Round& r = *round;
    // A held signal is released so the peer's pending wait can finish too.
    if (!r.released) (void)release(true);
    bool ok = true;
    if (r.submitted) {
      ctx.step("vkWaitForFences(producer write + signal, drain)");
      auto done = vksync::wait_fence(*sd, r.fence, kDrainNs, "producer drain");
      ok = done && *done;
      if (ok && r.timed) gpu_time = read_end_time();
    }
    if (!ok) {
      r.leaked = true;
      (void)round.release();  // its objects stay alive with the work that uses them
    }
    round.reset();
    return ok;
  }

  Result<Ok> hold(const Hold& req, os::UniqueFd& fd_out) {
    const SemaphoreKind* kind = kind_by_key(req.kind);
    if (kind == nullptr) return Error{"hold", ErrorKind::protocol, {}, "unknown semaphore kind"};
    if (!drain_round()) return Error{"hold", ErrorKind::timeout, {}, "the previous round did not drain"};
    auto r = std::make_unique<Round>();
    r->kind = kind;
    const vksync::Advertised adv = vksync::advertised(*ex.device, *kind);
    const std::string what = kind_text(*kind) + " semaphore export";
    ctx.step(fmt::format("vkCreateSemaphore(export {})", kind_text(*kind)));
    auto shared = vksync::create_semaphore(*sd, kind->type, kind->bit, "export " + kind_text(*kind));
    if (!shared) return site_error(shared.error(), classify_site(shared.error(), adv.exportable(), what));
    r->shared = std::move(*shared);
    auto fence = vksync::create_fence(*sd);
    if (!fence) return std::move(fence).error();
    r->fence = std::move(*fence);
    // write=false: a bare gate (the peer writes E itself, after waiting on this signal).
    if (req.write) {
      r->timed = req.time && ensure_end_slot();
      auto cmd = record_write(r->timed);
      if (!cmd) return std::move(cmd).error();
      r->write = *cmd;
      ctx.step("fill region E with the stale pattern (CPU)");
      pattern::fill(region(), kStaleSeed);
    }
    if (kind->type == VK_SEMAPHORE_TYPE_BINARY) {
      ctx.step("vkCreateSemaphore(host-held timeline gate)");
      auto gate = vksync::create_semaphore(*sd, VK_SEMAPHORE_TYPE_TIMELINE, 0, "host-held timeline gate");
      if (!gate) return std::move(gate).error();
      r->gate = std::move(*gate);
      // The binary signal must be submitted before the peer waits
      // (VUID-vkQueueSubmit-pWaitSemaphores-03238): submit it now, gated on the host.
      ctx.step("vkQueueSubmit(producer write + signal, gated on the host-held timeline)");
      vksync::Submit s{r->write, r->gate.get(), kTimelineValue, VK_PIPELINE_STAGE_TRANSFER_BIT, r->shared.get(), 0,
                       r->fence.get()};
      if (auto st = vksync::submit(*sd, s, "producer write + signal"); !st) return std::move(st).error();
      r->submitted = true;
    }
    round = std::move(r);
    ctx.step(fmt::format("vkGetSemaphoreFdKHR({})", kind->handle_name));
    auto fd = vksync::export_fd(*sd, round->shared, *kind);
    if (!fd) return site_error(fd.error(), classify_site(fd.error(), adv.exportable(), what));
    if (fd->minus_one)
      return Error{fmt::format("vkGetSemaphoreFdKHR({})", kind->handle_name), ErrorKind::driver, "fd -1",
                   "the driver says the payload is already signalled, but the signal is held back"};
    fd_out = std::move(fd->fd);
    return Ok{};
  }

  // `draining`: the signal is sent whatever a test fault says, so nothing stays pending.
  Status release(bool draining = false) {
    if (!round) return Error{"release", ErrorKind::protocol, {}, "release before hold"};
    Round& r = *round;
    if (r.released) return {};
    // Test-only negative control on a real driver: EXTMEM_TEST_FAULT=ROW:server:release:nosignal
    // answers "released" without signalling; the peer's bounded wait must time out, not hang.
    if (!draining && ctx.test_fault("release", "nosignal")) return {};
    if (r.kind->type == VK_SEMAPHORE_TYPE_BINARY) {
      ctx.step("vkSignalSemaphoreKHR(host-held gate, 1)");
      VkSemaphoreSignalInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
      si.semaphore = r.gate.get();
      si.value = kTimelineValue;
      VkResult res = sd->fn().vkSignalSemaphoreKHR(ex.device->handle(), &si);
      if (res != VK_SUCCESS) return vk::vk_error("vkSignalSemaphoreKHR(host-held gate)", res);
    } else {
      ctx.step("vkQueueSubmit(producer write + signal timeline value 1)");
      vksync::Submit s{r.write, VK_NULL_HANDLE, 0, VK_PIPELINE_STAGE_TRANSFER_BIT, r.shared.get(), kTimelineValue,
                       r.fence.get()};
      if (auto st = vksync::submit(*sd, s, "producer write + signal"); !st) return st;
      r.submitted = true;
    }
    r.released = true;
    return {};
  }

  // The reverse direction: this process waits, the peer signals.
  Result<Ok> wait_export(const WaitExport& req, os::UniqueFd& fd_out) {
    if (!drain_round()) return Error{"wait-export", ErrorKind::timeout, {}, "the previous round did not drain"};
    if (waiter && !waiter->drain()) return Error{"wait-export", ErrorKind::timeout, {}, "the previous waiter did not drain"};
    waiter.reset();
    const SemaphoreKind* k = kind_by_key(req.kind);
    if (k == nullptr || k->bit != VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT)
      return Error{"wait-export", ErrorKind::protocol, {}, "the waiter's semaphore must be an OPAQUE_FD kind"};
    const SemaphoreKind& kind = *k;
    const vksync::Advertised adv = vksync::advertised(*ex.device, kind);
    const std::string what = kind_text(kind) + " semaphore export";
    auto w = VkWaiter::create(*sd, ex.buffer.buffer, offset());
    if (!w) return std::move(w).error();
    ctx.step(fmt::format("vkCreateSemaphore(export {}, for the peer to signal)", kind_text(kind)));
    auto sem = vksync::create_semaphore(*sd, kind.type, kind.bit, "export " + kind_text(kind) + " for the peer");
    if (!sem) return site_error(sem.error(), classify_site(sem.error(), adv.exportable(), what));
    ctx.step("vkGetSemaphoreFdKHR(OPAQUE_FD, for the peer to signal)");
    auto fd = vksync::export_fd(*sd, *sem, kind);
    if (!fd) return site_error(fd.error(), classify_site(fd.error(), adv.exportable(), what));
    (*w)->set_semaphore(std::move(*sem), kind.type);
    waiter = std::move(*w);
    fd_out = std::move(fd->fd);
    return Ok{};
  }

  Status need_waiter(const char* op) const {
    if (!waiter) return Error{op, ErrorKind::protocol, {}, "no waiter (wait-export first)"};
    return {};
  }
  Result<Ok> wait_arm() {
    if (auto st = need_waiter("wait-arm"); !st) return std::move(st).error();
    ctx.step("vkQueueSubmit(waiter: wait + copy + marker)");
    if (auto st = waiter->arm(); !st) return std::move(st).error();
    return Ok{};
  }
  static WaitReply waited(const sync::Waited& w) { return WaitReply{w.result == sync::WaitResult::signalled, w.code}; }
  Result<WaitReply> wait_ungated(const WaitUngated& req) {
    if (auto st = need_waiter("wait-ungated"); !st) return std::move(st).error();
    const auto ms = std::chrono::milliseconds(req.ms);
    ctx.step(fmt::format("vkQueueSubmit(waiter: copy + marker, no wait) + vkWaitForFences({} ms)", ms.count()));
    auto w = waiter->ungated(ms);
    if (!w) return std::move(w).error();
    return waited(*w);
  }
  Result<ObserveReply> wait_observe() {
    if (auto st = need_waiter("wait-observe"); !st) return std::move(st).error();
    auto o = waiter->observe();
    if (!o) return std::move(o).error();
    ObserveReply r{o->fence_signalled, o->marker_present, std::nullopt};
    if (o->counter) r.counter = o->counter->value;
    return r;
  }
  Result<WaitReply> wait_wait(const WaitWait& req) {
    if (auto st = need_waiter("wait-wait"); !st) return std::move(st).error();
    const auto ms = std::chrono::milliseconds(req.ms);
    ctx.step(fmt::format("vkWaitForFences(waiter, {} ms)", ms.count()));
    auto w = waiter->wait(ms);
    if (!w) return std::move(w).error();
    return waited(*w);
  }
  Result<CheckReply> wait_check() {
    if (auto st = need_waiter("wait-check"); !st) return std::move(st).error();
    sync::CopyCheck c = waiter->check(kProducerSeed);
    return CheckReply{c.mismatched_words, c.words, c.first_mismatch};
  }
};

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int vk_side_serve(ChildContext& ctx, std::span<const SemaphoreKind* const> kinds) {
  auto fail_setup = [&](const RouteFacts& f) {
    (void)send_setup_failure(ctx, f);
    return 0;
  };
  auto dev = open_device(ctx, vksync::wanted_extensions());
  if (!dev) return fail_setup(server_facts(dev.error()));
  if (auto m = vksync::missing_extension(**dev)) return fail_setup(RouteFacts{.unsupported = "server: " + *m});
  for (const SemaphoreKind* k : kinds) {
    ctx.step(fmt::format("vkGetPhysicalDeviceExternalSemaphoreProperties({})", kind_text(*k)));
    const vksync::Advertised adv = vksync::advertised(**dev, *k);
    if (!adv.exportable()) return fail_setup(RouteFacts{.unsupported = "server: " + vksync::not_offered(*k, adv, "exportable")});
  }

  auto made = export_allocation(ctx, kOpaqueFd);
  if (auto* f = std::get_if<RouteFacts>(&made)) return fail_setup(*f);
  Server s{ctx, std::move(std::get<Exported>(made))};
  auto sd = vksync::SyncDevice::create(s.ex.device);
  if (!sd) return fail_setup(server_facts(sd.error()));
  s.sd = std::move(*sd);
  ctx.step("create the producer's staging buffer");
  vk::AllocationRequest req;
  req.size = kRegionSize;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto staging = s.ex.device->create_buffer(req);
  if (!staging) return fail_setup(server_facts(staging.error()));
  s.staging = std::move(*staging);
  pattern::fill(std::span<std::byte>(s.staging.mapped, kRegionSize), kProducerSeed);

  ctx.step("send the allocation fd");
  if (!send_setup(ctx, s.ex.info(), s.ex.fd.get())) return 0;

  bool clean = true;
  for (;;) {
    auto frame = ctx.peer().recv();
    if (!frame || frame->type != os::MsgType::request) break;
    auto req = decode_request(frame->payload);
    if (req && std::holds_alternative<Done>(*req)) break;
    json reply;
    os::UniqueFd fd;
    auto answer = [&](auto r) { reply = r ? body(*r) : body(refusal_of(r.error())); };
    if (!req) {
      reply = body(refusal_of(req.error()));
    } else if (const auto* h = std::get_if<Hold>(&*req)) {
      answer(s.hold(*h, fd));
    } else if (std::holds_alternative<Release>(*req)) {
      // --measure: the host clock (CLOCK_MONOTONIC, one clock for every process)
      // just before the signal is handed to the driver.
      const double t = os::monotonic_seconds();
      Status st = s.release();
      reply = st ? body(Released{t}) : body(refusal_of(st.error()));
    } else if (std::holds_alternative<Ping>(*req)) {
      reply = body(Pong{os::monotonic_seconds()});
    } else if (std::holds_alternative<PingGpu>(*req)) {
      answer(s.ping_gpu());
    } else if (std::holds_alternative<Drain>(*req)) {
      bool ok = s.drain_round();
      if (s.waiter) ok = s.waiter->drain() && ok;
      reply = body(Drained{ok, std::exchange(s.gpu_time, std::nullopt).value_or(GpuEnd{})});
    } else if (const auto* we = std::get_if<WaitExport>(&*req)) {
      answer(s.wait_export(*we, fd));
    } else if (std::holds_alternative<WaitArm>(*req)) {
      answer(s.wait_arm());
    } else if (const auto* wu = std::get_if<WaitUngated>(&*req)) {
      answer(s.wait_ungated(*wu));
    } else if (std::holds_alternative<WaitObserve>(*req)) {
      answer(s.wait_observe());
    } else if (const auto* ww = std::get_if<WaitWait>(&*req)) {
      answer(s.wait_wait(*ww));
    } else {
      answer(s.wait_check());
    }
    if (!ctx.peer().send(os::MsgType::reply, reply.dump(), fd.get())) break;
  }
  // Whatever the peer did, nothing is left pending on the GPU when the half ends.
  clean = s.drain_round();
  if (s.waiter) clean = s.waiter->drain() && clean;
  if (!clean) {
    // Work that did not finish still uses the pool, the staging buffer and the
    // export: leave them alive (VkWaiter's destructor says why).
    (void)s.sd.release();
    (void)new vk::Buffer(std::move(s.staging));
    (void)new Exported(std::move(s.ex));
  }
  return 0;
}

// ------------------------------------------------------- peer's Vulkan wait --

// A wait bound as a request carries it: whole ms, at most kMaxWaitMs (the producer's cap).
static std::uint64_t wire_ms(std::chrono::milliseconds bound) {
  return static_cast<std::uint64_t>(std::clamp<std::int64_t>(bound.count(), 0, kMaxWaitMs));
}
static sync::Waited waited(const WaitReply& r) {
  return sync::Waited{r.signalled ? sync::WaitResult::signalled : sync::WaitResult::timed_out, r.code};
}

Result<os::UniqueFd> PeerVkWaiter::prepare(const vksync::SemaphoreKind& kind) {
  os::UniqueFd fd;
  auto r = ask(ctx_, WaitExport{key_of(kind)}, &fd);
  if (!r) return std::move(r).error();
  if (!fd.valid()) return Error{"receive the waiter's semaphore fd", ErrorKind::protocol, {}, "no fd with the reply"};
  return fd;
}

Status PeerVkWaiter::arm() {
  auto r = ask(ctx_, WaitArm{});
  if (!r) return std::move(r).error();
  return {};
}

Result<sync::Waited> PeerVkWaiter::ungated_copy(std::chrono::milliseconds bound) {
  auto r = ask(ctx_, WaitUngated{wire_ms(bound)});
  if (!r) return std::move(r).error();
  return waited(*r);
}

Result<sync::Observation> PeerVkWaiter::observe() {
  auto r = ask(ctx_, WaitObserve{});
  if (!r) return std::move(r).error();
  sync::Observation o;
  o.fence_signalled = r->fence;
  o.marker_present = r->marker;
  if (r->counter) o.counter = sync::TimelineValue{*r->counter};
  return o;
}

Result<sync::Waited> PeerVkWaiter::wait_consumer(std::chrono::milliseconds bound) {
  auto r = ask(ctx_, WaitWait{wire_ms(bound)});
  if (!r) return std::move(r).error();
  return waited(*r);
}

Status PeerVkWaiter::release() {
  Status s = p_.write_and_signal();
  if (s) released_ = true;
  return s;
}

Result<sync::CopyCheck> PeerVkWaiter::check_copy() {
  auto r = ask(ctx_, WaitCheck{});
  if (!r) return std::move(r).error();
  sync::CopyCheck c;
  c.mismatched_words = r->mismatched;
  c.words = r->words;
  if (r->first) c.first_mismatch = *r->first;
  return c;
}

bool PeerVkWaiter::drain() {
  // The peer's wait can only finish once this side has signalled.
  if (!released_) (void)p_.write_and_signal();
  const bool mine = p_.drain();
  auto r = ask(ctx_, Drain{});
  return mine && r && r->drained;
}

}  // namespace extmem::probe::s1
