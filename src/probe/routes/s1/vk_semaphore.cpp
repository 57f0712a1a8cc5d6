// S1-semaphore-opaque-fd, S1-timeline-opaque-fd, S1-sync-fd: the Vulkan server
// (s1/vk_side.h, vk_side_serve) exports the T1 allocation and a semaphore and
// produces; this file's client imports both and its GPU waits on the semaphore
// before copying region E out and writing a marker. The ordering proof
// (probe/sync_proof.h) holds the signal back under the producer's host control,
// checks the copy has not landed, runs the no-signal control, releases, and
// compares the copy with the producer's GPU write. docs/probe.md, "S1".
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "probe/routes.h"
#include "probe/routes/s1/peer.h"
#include "probe/routes/s1/vk_side.h"
#include "probe/routes/s1/wake.h"
#include "probe/routes/vk/sync.h"
#include "probe/sync_proof.h"
#include "extmem/os/clock.h"
#include "probe/worker/half_end.h"
#include "probe/worker/measure.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/route_util.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

using vksync::SemaphoreKind;

// The consumer: the peer produces; this process imports the semaphore and its VkWaiter waits.
class VkConsumer final : public sync::OrderingSubject {
 public:
  VkConsumer(ChildContext& ctx, const SemaphoreKind& kind, vksync::SyncDevice& sd, s1::VkWaiter& waiter, bool importable)
      : ctx_(ctx), kind_(kind), sd_(sd), waiter_(waiter), importable_(importable) {}

  Status hold() override {
    os::UniqueFd fd;
    auto r = s1::ask(ctx_, s1::Hold{.kind = s1::key_of(kind_)}, &fd);
    if (!r) {
      if (r.error().kind == ErrorKind::unsupported) unsupported = r.error().detail;
      return std::move(r).error();
    }
    if (!fd.valid()) return Error{"receive the semaphore fd", ErrorKind::protocol, {}, "the hold reply carried no fd"};
    received_ = std::move(fd);
    if (kind_.bit == VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT) {
      ctx_.step("poll(SYNC_FD, POLLIN) while the signal is held");
      pollfd p{received_.get(), POLLIN, 0};
      const int n = ::poll(&p, 1, 0);
      if (n < 0) return os_error("poll(SYNC_FD)", errno);
      poll_before_readable = n > 0 && (p.revents & POLLIN) != 0;
      poll_before_done = true;
    }
    ctx_.step(fmt::format("vkCreateSemaphore(import {} {})", kind_.type_name, kind_.handle_name));
    auto sem = vksync::create_semaphore(sd_, kind_.type, 0, "import");
    if (!sem) return std::move(sem).error();
    auto dup = ImportDup::of(received_.get());
    if (!dup) return std::move(dup).error();
    ctx_.step(fmt::format("vkImportSemaphoreFdKHR({}, {})", kind_.handle_name, kind_.temporary ? "temporary" : "permanent"));
    Status st = vksync::import_fd(sd_, *sem, kind_, dup->number());
    // A successful import owns the fd (Vulkan spec, "Importing Semaphore Payloads").
    fd_text = dup->settle(st.ok());
    if (!st) {
      SiteFailure site = classify_site(st.error(), importable_,
                                       fmt::format("{} {} semaphore import", kind_.type_name, kind_.handle_name));
      if (site.unsupported) unsupported = "client: " + site.why;
      return st;
    }
    waiter_.set_semaphore(std::move(*sem), kind_.type);
    return {};
  }
  Result<sync::Waited> ungated_copy(std::chrono::milliseconds bound) override { return waiter_.ungated(bound); }
  Status arm() override {
    // Test-only negative control on a real driver: EXTMEM_TEST_FAULT=ROW:client:consumer submits:nowait
    // submits the copy without the semaphore wait, which the proof must catch at the not-landed step.
    if (ctx_.test_fault(sync::kStepArm, "nowait")) return waiter_.arm(false);
    return waiter_.arm();
  }
  Result<sync::Observation> observe() override { return waiter_.observe(); }
  Result<sync::Waited> wait_consumer(std::chrono::milliseconds bound) override { return waiter_.wait(bound); }
  Status release() override {
    auto r = s1::ask(ctx_, s1::Release{});
    if (!r) return std::move(r).error();
    return {};
  }
  Result<sync::CopyCheck> check_copy() override { return waiter_.check(s1::kProducerSeed); }
  bool drain() override {
    auto r = s1::ask(ctx_, s1::Drain{});
    const bool peer = r && r->drained;
    return waiter_.drain() && peer;
  }

  std::optional<std::string> unsupported;
  std::string fd_text;
  bool poll_before_done = false, poll_before_readable = false;
  const os::UniqueFd& received() const { return received_; }

 private:
  ChildContext& ctx_;
  const SemaphoreKind& kind_;
  vksync::SyncDevice& sd_;
  s1::VkWaiter& waiter_;
  bool importable_;
  os::UniqueFd received_;
};

// --measure, after an ordered proof: `repeats()` rounds of (a) the semaphore
// path, the producer's host signal to the consumer's wake from its fence wait
// (the producer's GPU write and the consumer's 4 KiB copy included), and (b)
// the socket path, a message from the producer's host, then the same copy
// submitted with no wait, to the consumer's wake. Both from CLOCK_MONOTONIC,
// which the two processes share; microseconds, as route-level figures
// "semaphore_wake_us" and "socket_submit_wake_us".
//
// Where both devices calibrate their timestamps against CLOCK_MONOTONIC
// (VK_EXT_calibrated_timestamps), the same rounds are also timed on the GPUs:
// "semaphore_gpu_wake_us", the producer's write ending (a BOTTOM_OF_PIPE
// timestamp, just before its signal) to the consumer's work starting after its
// wait (a TRANSFER timestamp the wait holds back); and, against it,
// "socket_gpu_wake_us": the producer's write ending, its host seeing the fence,
// a message, the consumer's submit and its GPU starting (ping-gpu). Without
// calibration "gpu_clock_fallback" says why.
class WakeTimer {
 public:
  WakeTimer(ChildContext& ctx, vksync::SyncDevice& sd) : ctx_(ctx), sd_(sd) {}

  // Both waiters time their start; false (and the reason kept) when this device cannot.
  bool prepare(s1::VkWaiter& a, s1::VkWaiter& b) {
    auto clock = vk::HostClock::calibrate(sd_.device());
    if (!clock) return fail(why_of(clock.error()));
    if (auto st = a.time_start(); !st) return fail(why_of(st.error()));
    if (auto st = b.time_start(); !st) return fail(why_of(st.error()));
    return true;
  }
  bool on() const { return fallback_.empty(); }

  // One sample into `out`: the waiter's GPU start minus the producer's GPU end `end`.
  void sample(std::vector<double>& out, const s1::VkWaiter& w, const s1::GpuEnd& end) {
    if (!on()) return;
    if (end.gpu_error) {
      (void)fail("producer: " + *end.gpu_error);
      return;
    }
    if (!end.gpu_t) {
      (void)fail("producer: no GPU time in its reply");
      return;
    }
    auto clock = vk::HostClock::calibrate(sd_.device());
    if (!clock) {
      (void)fail(why_of(clock.error()));
      return;
    }
    auto start = w.started_at(*clock);
    if (!start) {
      (void)fail(why_of(start.error()));
      return;
    }
    out.push_back((*start - *end.gpu_t) * 1e6);
    deviation_ns_ = std::max({deviation_ns_, clock->max_deviation_ns(), end.max_deviation_ns});
  }

  void report(std::vector<double> sem_us, std::vector<double> socket_us) {
    if (!on()) {
      if (RouteFigures* r = measure::route()) r->gpu_clock_fallback = fallback_;
      return;
    }
    s1::report_gpu_wake("vk-calibrated-timestamp", std::move(sem_us), std::move(socket_us), deviation_ns_);
  }

 private:
  bool fail(std::string why) {
    if (fallback_.empty()) fallback_ = std::move(why);
    ctx_.step("measure on the GPU clock: " + fallback_);
    return false;
  }
  ChildContext& ctx_;
  vksync::SyncDevice& sd_;
  std::string fallback_;
  std::uint64_t deviation_ns_ = 0;
};

void measure_wake(ChildContext& ctx, const SemaphoreKind& kind, vksync::SyncDevice& sd, VkBuffer shared) {
  std::vector<double> sem_us, socket_us, sem_gpu_us, socket_gpu_us;
  auto waiter = s1::VkWaiter::create(sd, shared, ctx.layout().offset(s1::kRegion));
  if (!waiter) return;
  auto plain = s1::VkWaiter::create(sd, shared, ctx.layout().offset(s1::kRegion));
  if (!plain) return;
  WakeTimer gpu(ctx, sd);
  (void)gpu.prepare(**waiter, **plain);
  for (unsigned i = 0; i < measure::repeats(); ++i) {
    ctx.step(fmt::format("measure signal-to-wake, round {}", i + 1));
    os::UniqueFd fd;
    if (!s1::ask(ctx, s1::Hold{.kind = s1::key_of(kind), .time = gpu.on()}, &fd) || !fd.valid()) break;
    auto sem = vksync::create_semaphore(sd, kind.type, 0, "import (measure)");
    if (!sem) break;
    auto dup = ImportDup::of(fd.get());
    if (!dup) break;
    Status imported = vksync::import_fd(sd, *sem, kind, dup->number());
    (void)dup->settle(imported.ok());
    if (!imported) break;
    (*waiter)->set_semaphore(std::move(*sem), kind.type);
    if (!(*waiter)->arm()) break;
    auto released = s1::ask(ctx, s1::Release{});
    if (!released) break;
    auto w = (*waiter)->wait(std::chrono::milliseconds(5000));
    const double woke = os::monotonic_seconds();
    if (!w || w->result != sync::WaitResult::signalled) break;
    sem_us.push_back((woke - released->t) * 1e6);
    auto d = s1::ask(ctx, s1::Drain{});
    if (!d || !d->drained) break;
    gpu.sample(sem_gpu_us, **waiter, d->gpu);

    ctx.step(fmt::format("measure socket round trip + submit, round {}", i + 1));
    auto ping = s1::ask(ctx, s1::Ping{});
    if (!ping) break;
    if (!(*plain)->arm()) break;
    auto pw = (*plain)->wait(std::chrono::milliseconds(5000));
    const double done = os::monotonic_seconds();
    if (!pw || pw->result != sync::WaitResult::signalled) break;
    socket_us.push_back((done - ping->t) * 1e6);

    if (gpu.on()) {
      ctx.step(fmt::format("measure GPU write, host relay, GPU start, round {}", i + 1));
      auto pg = s1::ask(ctx, s1::PingGpu{});
      if (!pg) break;
      if (!(*plain)->arm()) break;
      auto gw = (*plain)->wait(std::chrono::milliseconds(5000));
      if (!gw || gw->result != sync::WaitResult::signalled) break;
      gpu.sample(socket_gpu_us, **plain, pg->gpu);
    }
  }
  // A round cut short may have left a held signal: the producer releases it here.
  const bool peer = [&] {
    auto d = s1::ask(ctx, s1::Drain{});
    return d && d->drained;
  }();
  if (!(*waiter)->drain() || !(*plain)->drain() || !peer) return;
  measure::route_latency(&RouteFigures::semaphore_wake_us, std::move(sem_us));
  measure::route_latency(&RouteFigures::socket_submit_wake_us, std::move(socket_us));
  gpu.report(std::move(sem_gpu_us), std::move(socket_gpu_us));
}

int consumer(ChildContext& ctx, const SemaphoreKind& kind) {
  const Layout& layout = ctx.layout();
  // One consumer for three rows; S1-sync-fd's table adds pollfd.
  Leg order = route_leg(ctx, "order");
  Leg pollfd_leg = route_leg(ctx, "pollfd");
  const bool sync_fd = kind.bit == VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT;
  DrivingHalf half(ctx, {&order});
  RouteReport& rep = half.rep;
  if (sync_fd) half.also_report(pollfd_leg);
  auto setup = half.start("the producer's allocation");
  if (!setup) return half.finish();
  auto dev = open_device(ctx, vksync::wanted_extensions());
  if (!dev) {
    stop_row(rep.facts, dev.error().kind, "client: " + why_of(dev.error()));
    return half.finish();
  }
  if (auto m = vksync::missing_extension(**dev)) {
    rep.facts.unsupported = "client: " + *m;
    return half.finish();
  }
  ctx.step(fmt::format("vkGetPhysicalDeviceExternalSemaphoreProperties({} {})", kind.type_name, kind.handle_name));
  const vksync::Advertised adv = vksync::advertised(**dev, kind);
  if (!adv.importable()) {
    rep.facts.unsupported = "client: " + vksync::not_offered(kind, adv, "importable");
    return half.finish();
  }
  rep.detail.push_back(fmt::format("semaphore={} {} {}", kind.type_name, kind.handle_name, adv.text()));

  // The T1 allocation, imported as T1-opaque-fd's client does.
  const auto alloc_size = setup->info.allocation_size.value_or(std::uint64_t{0});
  if (alloc_size < layout.size) {
    rep.facts.fatal = fmt::format("server announced allocation {} < size {}", alloc_size, layout.size);
    return half.finish();
  }
  auto mem_dup = ImportDup::of(setup->fd.get());
  if (!mem_dup) {
    rep.facts.fatal = "client: " + why_of(mem_dup.error());
    rep.facts.stop_kind = mem_dup.error().kind;
    return half.finish();
  }
  vk::AllocationRequest req;
  req.size = layout.size;
  req.external_handle_types = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  req.import_fd_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  req.allocation_size = alloc_size;
  req.dedicated = setup->info.dedicated.value_or(false) ? 1 : 0;
  // Must equal the exporter's (Vulkan spec, VkImportMemoryFdInfoKHR).
  req.memory_type_index = static_cast<int>(setup->info.memory_type_index.value_or(0u));
  req.import_fd = mem_dup->number();
  req.map = false;
  ctx.step("vkAllocateMemory(import OPAQUE_FD)");
  vk::AllocationFailure af;
  auto shared = (*dev)->create_buffer(req, &af);
  rep.detail.push_back("memory " + mem_dup->settle(shared || af.memory_allocated));
  if (!shared) {
    SiteFailure s = classify_site(af.error, advertised(**dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
                                                        VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT), "OPAQUE_FD import");
    stop_row(rep.facts, s.kind(), "client: " + s.why);
    return half.finish();
  }
  auto sd = vksync::SyncDevice::create(*dev);
  if (!sd) {
    rep.facts.fatal = "client: " + why_of(sd.error());
    rep.facts.stop_kind = sd.error().kind;
    return half.finish();
  }
  auto waiter = s1::VkWaiter::create(**sd, shared->buffer, layout.offset(s1::kRegion));
  if (!waiter) {
    rep.facts.fatal = "client: " + why_of(waiter.error());
    rep.facts.stop_kind = waiter.error().kind;
    return half.finish();
  }

  VkConsumer subject(ctx, kind, **sd, **waiter, adv.importable());
  sync::ProofOutcome o = sync::prove_ordering(subject, s1::proof_config(), s1::step_sink, &ctx);
  s1::record_proof(o, order, rep.facts);
  if (subject.unsupported) rep.facts.unsupported = *subject.unsupported;
  rep.detail.push_back(fmt::format("import={} transference={} semaphore {}", kind.temporary ? "temporary" : "permanent",
                                   kind.transference, subject.fd_text.empty() ? "fd-consumed=notrun" : subject.fd_text));
  std::uint64_t counter = 0;
  if (auto seen = (*waiter)->observe(); seen && seen->counter) counter = seen->counter->value;
  rep.detail.push_back(s1::proof_detail(o, kind.type == VK_SEMAPHORE_TYPE_TIMELINE, counter));

  if (sync_fd) {
    pollfd_leg.attempted = subject.poll_before_done;
    pollfd_leg.read_ok = subject.poll_before_done && !subject.poll_before_readable;
    if (subject.poll_before_done && subject.poll_before_readable) {
      pollfd_leg.failed_step = "poll(SYNC_FD, POLLIN) while the signal is held";
      pollfd_leg.code = "readable";
    }
    if (subject.poll_before_done && o.drained && subject.received().valid()) {
      ctx.step("poll(SYNC_FD, POLLIN) after the signal");
      pollfd p{subject.received().get(), POLLIN, 0};
      const int n = ::poll(&p, 1, 5000);
      pollfd_leg.write_ok = n > 0 && (p.revents & POLLIN) != 0;
      if (!pollfd_leg.write_ok && pollfd_leg.failed_step.empty()) {
        pollfd_leg.failed_step = "poll(SYNC_FD, POLLIN) after the signal";
        pollfd_leg.code = n < 0 ? errno_code(errno) : "not readable within 5000 ms";
      }
    }
    rep.detail.push_back(fmt::format("poll: held={} signalled={}", subject.poll_before_readable ? "readable" : "not-readable",
                                     pollfd_leg.write_ok ? "readable" : "not-readable"));
  }
  if (o.ordered && o.drained && measure::enabled()) measure_wake(ctx, kind, **sd, shared->buffer);
  if (!o.drained) {
    // The imported memory backs work that may still run: keep it alive (see VkWaiter's destructor).
    (void)new vk::Buffer(std::move(*shared));
    (void)sd->release();
  }
  return half.finish();
}

constexpr const SemaphoreKind* kBinaryOnly[] = {&vksync::kBinaryOpaque};
constexpr const SemaphoreKind* kTimelineOnly[] = {&vksync::kTimelineOpaque};
constexpr const SemaphoreKind* kSyncFdOnly[] = {&vksync::kBinarySyncFd};
constexpr LegDef kLegs[] = {
    {"order", true, "the consumer's GPU waited for the producer's signal (held copy not landed, no-signal control timed out) "
                    "and then copied exactly the producer's GPU write"},
};
constexpr LegDef kSyncFdLegs[] = {
    {"order", true, "the consumer's GPU waited for the producer's signal (held copy not landed, no-signal control timed out) "
                    "and then copied exactly the producer's GPU write"},
    {"pollfd", true, "the exported sync file is not readable while the signal is held and readable after it"},
};

constexpr FaultDef kFaults[] = {kCloseFdFault, s1::kNoSignalFault, s1::kNoWaitFault};

const RouteDef kS1SemaphoreOpaqueFd{
    .row = "S1-semaphore-opaque-fd",
    .group = "s1",
    .needs = {.extensions = needs::kFdMemoryAndSemaphores, .handle_types = needs::kOpaqueFdBoth},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"exports a binary semaphore and the T1 allocation, holds then releases its GPU write + signal",
               [](ChildContext& c) { return s1::vk_side_serve(c, kBinaryOnly); }},
    .client = {"imports both, waits on the GPU, copies out, drives the ordering proof",
               [](ChildContext& c) { return consumer(c, vksync::kBinaryOpaque); }},
    .passes_fds = true};
const RouteDef kS1TimelineOpaqueFd{
    .row = "S1-timeline-opaque-fd",
    .group = "s1",
    .needs = {.extensions = needs::kFdMemoryAndSemaphores, .handle_types = needs::kOpaqueFdBoth},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"exports a timeline semaphore and the T1 allocation, signals value 1 from its GPU when released",
               [](ChildContext& c) { return s1::vk_side_serve(c, kTimelineOnly); }},
    .client = {"imports both, waits for value 1 on the GPU, copies out, drives the ordering proof",
               [](ChildContext& c) { return consumer(c, vksync::kTimelineOpaque); }},
    .passes_fds = true};
const RouteDef kS1SyncFd{
    .row = "S1-sync-fd",
    .group = "s1",
    .needs = {.extensions = needs::kFdMemoryAndSemaphores, .handle_types = needs::kOpaqueFdBoth},
    .legs = kSyncFdLegs,
    .faults = kFaults,
    .server = {"submits a held write + signal, exports it as a sync file, releases it",
               [](ChildContext& c) { return s1::vk_side_serve(c, kSyncFdOnly); }},
    .client = {"polls the sync file, imports it temporarily, waits on the GPU, drives the ordering proof",
               [](ChildContext& c) { return consumer(c, vksync::kBinarySyncFd); }},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kS1SemaphoreOpaqueFd, 230);
EXTMEM_ROUTE(kS1TimelineOpaqueFd, 240);
EXTMEM_ROUTE(kS1SyncFd, 250);

}  // namespace extmem::probe
