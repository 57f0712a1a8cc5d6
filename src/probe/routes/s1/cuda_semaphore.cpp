// S1-cuda-semaphore: the Vulkan server (s1/vk_side.h) exports the T1
// allocation and semaphores; this client imports the allocation into CUDA and
// runs the ordering proof (probe/sync_proof.h) three times:
//   cudawait-binary    Vulkan signals a binary OPAQUE_FD semaphore (held behind
//                      its host's gate), CUDA waits (cuWaitExternalSemaphoresAsync)
//                      before copying region E out
//   cudawait-timeline  the same with a timeline semaphore, value 1
//   cudasignal         CUDA writes region E and signals a timeline semaphore the
//                      Vulkan side exported (cuSignalExternalSemaphoresAsync),
//                      releasing a Vulkan wait
// CUDA has no fence to look at without waiting, so "landed" is cuStreamQuery
// (CUDA_SUCCESS, not CUDA_ERROR_NOT_READY) plus the marker the stream copies
// into pinned host memory after the region. docs/probe.md, "S1".
#include <chrono>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/clock.h"
#include "probe/routes.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/routes/cuda/stream_sync.h"
#include "probe/routes/s1/peer.h"
#include "probe/routes/s1/vk_side.h"
#include "probe/routes/s1/wake.h"
#include "probe/sync_proof.h"
#include "probe/worker/half_end.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"cudawait-binary", true, "CUDA's stream waited on a Vulkan binary semaphore from another process before its copy"},
    {"cudawait-timeline", true, "CUDA's stream waited on a Vulkan timeline semaphore (value 1) before its copy"},
    {"cudasignal", true, "CUDA's signal of a timeline semaphore released a Vulkan wait in the other process"},
};

using vksync::SemaphoreKind;

// The import failure a driver gives for a handle type it does not do; any other
// code at an import site is FAIL (the Vulkan side advertised the export).
bool not_supported(const Error& e) { return e.space == CodeSpace::cu_result && e.native == CUDA_ERROR_NOT_SUPPORTED; }

// A stream, pinned host memory, an imported semaphore: one CUDA side of one proof.
class CudaStreamSide {
 public:
  explicit CudaStreamSide(const cuda::Api& api) : api_(api) {}
  ~CudaStreamSide() {
    if (leaked_) return;  // pending work may still use them (see VkWaiter's destructor)
    if (sem_ != nullptr) (void)api_.cuDestroyExternalSemaphore(sem_);
    if (stream_ != nullptr) (void)api_.cuStreamDestroy(stream_);
    if (host_ != nullptr) (void)api_.cuMemFreeHost(host_);
  }
  CudaStreamSide(const CudaStreamSide&) = delete;
  CudaStreamSide& operator=(const CudaStreamSide&) = delete;

  // Idempotent: the proof's calibration may have created the side already.
  Status create(ChildContext& ctx) {
    if (stream_ != nullptr) return {};
    ctx.step("cuStreamCreate(CU_STREAM_NON_BLOCKING)");
    if (CUresult r = api_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
      return cuda::cu_error(api_, "cuStreamCreate", r);
    ctx.step("cuMemAllocHost(pinned copy buffer)");
    if (CUresult r = api_.cuMemAllocHost(&host_, kHostBytes); r != CUDA_SUCCESS) {
      host_ = nullptr;
      return cuda::cu_error(api_, fmt::format("cuMemAllocHost({} bytes)", kHostBytes), r);
    }
    std::memset(host_, 0, kHostBytes);
    return {};
  }

  // Imports a dup of `fd`; `what` names the semaphore in steps. Sets fd_text.
  Status import(ChildContext& ctx, int fd, bool timeline) {
    auto dup = ImportDup::of(fd);
    if (!dup) return std::move(dup).error();
    const char* type = timeline ? "TIMELINE_SEMAPHORE_FD" : "OPAQUE_FD";
    ctx.step(fmt::format("cuImportExternalSemaphore({})", type));
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
    desc.type = timeline ? CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD : CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = dup->number();
    CUresult r = api_.cuImportExternalSemaphore(&sem_, &desc);
    // A successful import owns the fd (cuda.h, cuImportExternalSemaphore).
    fd_text = dup->settle(r == CUDA_SUCCESS);
    if (r != CUDA_SUCCESS) {
      sem_ = nullptr;
      return cuda::cu_error(api_, fmt::format("cuImportExternalSemaphore({})", type), r);
    }
    return {};
  }

  Result<sync::Waited> wait(std::chrono::milliseconds bound) { return cuda_sync::poll_stream(api_, stream_, bound); }

  bool drain() {
    auto w = wait(std::chrono::milliseconds(5000));
    const bool ok = w && w->result == sync::WaitResult::signalled;
    if (!ok) leaked_ = true;
    return ok;
  }

  static constexpr std::size_t kHostBytes = kRegionSize + 256;
  const cuda::Api& api_;
  CUstream stream_ = nullptr;
  void* host_ = nullptr;
  CUexternalSemaphore sem_ = nullptr;
  std::string fd_text;
  bool leaked_ = false;
};

// CUDA waits, the Vulkan peer produces (cudawait-binary, cudawait-timeline).
class CudaConsumer final : public sync::OrderingSubject {
 public:
  CudaConsumer(ChildContext& ctx, const cuda::Api& api, const SemaphoreKind& kind, CUdeviceptr shared,
               CUdeviceptr marker)
      : ctx_(ctx), side_(api), kind_(kind), shared_(shared), marker_(marker) {}

  Status hold() override {
    if (auto s = side_.create(ctx_); !s) return s;
    os::UniqueFd fd;
    auto r = s1::ask(ctx_, s1::Hold{.kind = s1::key_of(kind_)}, &fd);
    if (!r) {
      if (r.error().kind == ErrorKind::unsupported) unsupported = r.error().detail;
      return std::move(r).error();
    }
    if (!fd.valid()) return Error{"receive the semaphore fd", ErrorKind::protocol, {}, "the hold reply carried no fd"};
    Status s = side_.import(ctx_, fd.get(), kind_.type == VK_SEMAPHORE_TYPE_TIMELINE);
    if (!s && not_supported(s.error())) unsupported = "client: " + why_of(s.error());
    return s;
  }

  Result<sync::Waited> ungated_copy(std::chrono::milliseconds bound) override {
    if (auto s = side_.create(ctx_); !s) return std::move(s).error();
    ctx_.step("cuMemcpyDtoHAsync(region E) + marker, no wait");
    armed_ = true;
    if (auto s = cuda_sync::copy_out_with_marker(side_.api_, side_.stream_, side_.host_, shared_, marker_); !s)
      return std::move(s).error();
    auto w = side_.wait(bound);
    if (w && w->result == sync::WaitResult::signalled) std::memset(side_.host_, 0, CudaStreamSide::kHostBytes);
    return w;
  }

  Status arm() override {
    const cuda::Api& api = side_.api_;
    ctx_.step("cuWaitExternalSemaphoresAsync + cuMemcpyDtoHAsync(region E) + marker");
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wp{};
    wp.params.fence.value = s1::kTimelineValue;  // ignored for a binary semaphore
    if (CUresult r = api.cuWaitExternalSemaphoresAsync(&side_.sem_, &wp, 1, side_.stream_); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuWaitExternalSemaphoresAsync", r);
    armed_ = true;
    return cuda_sync::copy_out_with_marker(api, side_.stream_, side_.host_, shared_, marker_);
  }

  Result<sync::Observation> observe() override {
    return cuda_sync::observe(side_.api_, side_.stream_, side_.host_);  // no counter check: CUDA reads none
  }

  Result<sync::Waited> wait_consumer(std::chrono::milliseconds bound) override { return side_.wait(bound); }

  Status release() override { return s1::release_producer(ctx_); }

  Result<sync::CopyCheck> check_copy() override { return s1::check_producer_copy(side_.host_); }

  bool drain() override {
    auto r = s1::ask(ctx_, s1::Drain{});
    const bool peer = r && r->drained;
    return (!armed_ || side_.drain()) && peer;
  }

  std::optional<std::string> unsupported;
  const std::string& fd_text() const { return side_.fd_text; }

 private:
  ChildContext& ctx_;
  CudaStreamSide side_;
  const SemaphoreKind& kind_;
  CUdeviceptr shared_;  // region E of the imported allocation
  CUdeviceptr marker_;  // 4 bytes holding kMarker
  bool armed_ = false;
};

// Runs one proof into `leg` and the detail; returns whether its work drained.
bool run_proof(ChildContext& ctx, sync::OrderingSubject& subject, Leg& leg, RouteReport& rep, const std::string& label,
               const std::string& fd_text) {
  sync::ProofOutcome o = sync::prove_ordering(subject, s1::proof_config(), s1::step_sink, &ctx);
  s1::record_proof(o, leg, rep.facts);
  // CUDA imports an fd for the object's life (permanent); OPAQUE_FD's transference is by reference.
  rep.detail.push_back(fmt::format("{}: {} import=permanent transference=reference semaphore {}", label,
                                   s1::proof_detail(o, false, 0),
                                   fd_text.empty() ? "fd-consumed=notrun" : fd_text));
  return o.drained;
}

// --measure, after the proofs: rounds of the Vulkan producer's write ending on
// its GPU (the server's BOTTOM_OF_PIPE timestamp, on CLOCK_MONOTONIC through
// VK_EXT_calibrated_timestamps: "gpu_t" of its drain reply) to CUDA's stream
// getting past its wait on the timeline semaphore. CUDA has no clock another
// process can compare with, so the stream's first command after the wait is a
// cuStreamWriteValue32 into pinned host memory, and a host thread spinning on
// that word stamps its arrival with CLOCK_MONOTONIC: the stamp is late by the
// PCIe write and one poll (about a microsecond), never early. Against it, the
// host relay: ping-gpu (the same write with no semaphore, its fence seen by the
// server's host, a message) and then the same cuStreamWriteValue32 submitted
// here. Route figures semaphore_gpu_wake_us / socket_gpu_wake_us, as the
// Vulkan rows give them, with gpu_wake_clock naming this clock.
class CudaWakeTimer {
 public:
  CudaWakeTimer(ChildContext& ctx, const cuda::Api& api) : ctx_(ctx), api_(api) {}
  ~CudaWakeTimer() {
    if (flag_ != nullptr && !leaked_) (void)api_.cuMemFreeHost(flag_);
  }
  CudaWakeTimer(const CudaWakeTimer&) = delete;
  CudaWakeTimer& operator=(const CudaWakeTimer&) = delete;

  void run() {
    ctx_.step("measure: cuMemAllocHost + cuMemHostGetDevicePointer(wake word)");
    if (CUresult r = api_.cuMemAllocHost(&flag_, 64); r != CUDA_SUCCESS) {
      flag_ = nullptr;
      return fallback(why_of(cuda::cu_error(api_, "cuMemAllocHost(wake word)", r)));
    }
    *static_cast<std::uint32_t*>(flag_) = 0;
    if (CUresult r = api_.cuMemHostGetDevicePointer(&flag_dev_, flag_, 0); r != CUDA_SUCCESS)
      return fallback(why_of(cuda::cu_error(api_, "cuMemHostGetDevicePointer(wake word)", r)));
    std::vector<double> sem_us, socket_us;
    std::uint64_t deviation = 0;
    for (unsigned i = 0; i < measure::repeats(); ++i) {
      const std::uint32_t v = 2 * i + 1;
      ctx_.step(fmt::format("measure signal-to-wake (CUDA waits), round {}", i + 1));
      CudaStreamSide side(api_);
      if (!side.create(ctx_)) return;
      os::UniqueFd fd;
      auto held = s1::ask(ctx_, s1::Hold{.kind = s1::key_of(vksync::kTimelineOpaque), .time = true}, &fd);
      if (!held || !fd.valid() || !side.import(ctx_, fd.get(), true)) return drain_peer();
      CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wp{};
      wp.params.fence.value = s1::kTimelineValue;
      if (api_.cuWaitExternalSemaphoresAsync(&side.sem_, &wp, 1, side.stream_) != CUDA_SUCCESS ||
          api_.cuStreamWriteValue32(side.stream_, flag_dev_, v, 0) != CUDA_SUCCESS) {
        return drain_peer();
      }
      double seen = 0;
      std::thread spinner([&] { seen = spin_until(v); });
      auto released = s1::ask(ctx_, s1::Release{});
      spinner.join();
      auto d = s1::ask(ctx_, s1::Drain{});
      if (!released || seen == 0 || !d || !d->drained || !side.drain()) {
        leaked_ = leaked_ || seen == 0;  // the stream may still write the word
        return fallback("signal-to-wake round " + std::to_string(i + 1) + " did not complete");
      }
      if (!d->gpu.gpu_t) return fallback("producer: " + d->gpu.gpu_error.value_or("no GPU time"));
      sem_us.push_back((seen - *d->gpu.gpu_t) * 1e6);
      deviation = std::max(deviation, d->gpu.max_deviation_ns);

      ctx_.step(fmt::format("measure GPU write, host relay, CUDA start, round {}", i + 1));
      auto pg = s1::ask(ctx_, s1::PingGpu{});
      if (!pg || !pg->gpu.gpu_t) return fallback("producer: ping-gpu gave no GPU time");
      if (api_.cuStreamWriteValue32(side.stream_, flag_dev_, v + 1, 0) != CUDA_SUCCESS) return;
      const double relayed = spin_until(v + 1);
      if (relayed == 0 || !side.drain()) {
        leaked_ = true;
        return fallback("host-relay round " + std::to_string(i + 1) + " did not complete");
      }
      socket_us.push_back((relayed - *pg->gpu.gpu_t) * 1e6);
    }
    s1::report_gpu_wake("vk-calibrated-timestamp to cuda-host-observed-write", std::move(sem_us), std::move(socket_us),
                        deviation);
  }

 private:
  double spin_until(std::uint32_t v) const { return s1::wake_word_seen(flag_, v); }
  void drain_peer() {
    auto d = s1::ask(ctx_, s1::Drain{});
    (void)d;
    fallback("a measure round could not be set up");
  }
  void fallback(std::string why) { s1::gpu_wake_fallback(ctx_, std::move(why)); }
  ChildContext& ctx_;
  const cuda::Api& api_;
  void* flag_ = nullptr;
  CUdeviceptr flag_dev_ = 0;
  bool leaked_ = false;
};

// The T1 allocation imported into CUDA as T1-opaque-fd-cuda imports it (the
// exporter's size and dedicated flag: CUDA must be told what Vulkan did) and
// mapped whole. Returns false with the row's facts set.
struct ImportedAllocation {
  CUexternalMemory ext = nullptr;
  CUdeviceptr base = 0;
};
bool import_allocation(ChildContext& ctx, const cuda::Api& api, const Setup& setup, RouteReport& rep,
                       ImportedAllocation& im) {
  auto dup = ImportDup::of(setup.fd.get());
  if (!dup) {
    rep.facts.fatal = "client: " + why_of(dup.error());
    rep.facts.stop_kind = dup.error().kind;
    return false;
  }
  ctx.step("cuImportExternalMemory(OPAQUE_FD)");
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = dup->number();
  desc.size = setup.info.allocation_size.value_or(std::uint64_t{0});
  desc.flags = setup.info.dedicated.value_or(false) ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
  CUresult r = api.cuImportExternalMemory(&im.ext, &desc);
  rep.detail.push_back("memory " + dup->settle(r == CUDA_SUCCESS));
  if (r != CUDA_SUCCESS) {
    im.ext = nullptr;
    rep.facts.fatal = "client: " + why_of(cuda::cu_error(api, "cuImportExternalMemory(OPAQUE_FD)", r));
    return false;
  }
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.size = ctx.layout().size;
  ctx.step("cuExternalMemoryGetMappedBuffer");
  if (r = api.cuExternalMemoryGetMappedBuffer(&im.base, im.ext, &bd); r != CUDA_SUCCESS) {
    (void)api.cuDestroyExternalMemory(im.ext);
    im.ext = nullptr;
    rep.facts.fatal = "client: " + why_of(cuda::cu_error(api, "cuExternalMemoryGetMappedBuffer", r));
    return false;
  }
  return true;
}

// cudasignal: the other direction, CUDA produces behind its stream and signals
// the timeline semaphore the Vulkan side waits on. Returns whether the proof drained.
bool cudasignal_leg(ChildContext& ctx, const cuda::Api& api, CUdeviceptr region, RouteReport& rep, Leg& signal) {
    CudaStreamSide producer(api);
  std::vector<std::byte> data(kRegionSize), stale(kRegionSize);
  pattern::fill(data, s1::kProducerSeed);
  pattern::fill(stale, s1::kStaleSeed);
  s1::PeerVkWaiter::Producer ops{
      .hold =
          [&]() -> Status {
            if (auto s = producer.create(ctx); !s) return s;
            std::memcpy(producer.host_, data.data(), kRegionSize);
            ctx.step("cuMemcpyHtoD(region E, stale pattern)");
            if (CUresult c = api.cuMemcpyHtoD(region, stale.data(), kRegionSize); c != CUDA_SUCCESS)
              return cuda::cu_error(api, "cuMemcpyHtoD(region E, stale pattern)", c);
            return {};
          },
      .write_and_signal =
          [&]() -> Status {
            ctx.step("cuMemcpyHtoDAsync(region E) + cuSignalExternalSemaphoresAsync(value 1)");
            if (CUresult c = api.cuMemcpyHtoDAsync(region, producer.host_, kRegionSize, producer.stream_); c != CUDA_SUCCESS)
              return cuda::cu_error(api, "cuMemcpyHtoDAsync(region E)", c);
            CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS sp{};
            sp.params.fence.value = s1::kTimelineValue;
            if (CUresult c = api.cuSignalExternalSemaphoresAsync(&producer.sem_, &sp, 1, producer.stream_);
                c != CUDA_SUCCESS)
              return cuda::cu_error(api, "cuSignalExternalSemaphoresAsync", c);
            return {};
          },
      .drain = [&] { return producer.stream_ == nullptr || producer.drain(); },
  };
  s1::PeerVkWaiter subject(ctx, ops);
  auto fd = subject.prepare(vksync::kTimelineOpaque);
  Status imported = fd ? producer.import(ctx, fd->get(), true) : Status{fd.error()};
  if (!imported) {
    fail_leg(signal, imported.error());
    if (not_supported(imported.error())) rep.facts.unsupported = "client: " + why_of(imported.error());
    if (!fd && fd.error().kind == ErrorKind::unsupported) rep.facts.unsupported = fd.error().detail;
  } else {
    return run_proof(ctx, subject, signal, rep, "cudasignal", producer.fd_text);
  }
  return true;
}

int cuda_client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg wait_binary = report_leg({kLegs, "cudawait-binary"});
  Leg wait_timeline = report_leg({kLegs, "cudawait-timeline"});
  Leg signal = report_leg({kLegs, "cudasignal"});
  DrivingHalf half(ctx, {&wait_binary, &wait_timeline, &signal});
  RouteReport& rep = half.rep;
  // CUDA first: the row's first requirement is the CUDA driver, so a driver that
  // cannot be loaded decides it (SKIP or UNSUPPORTED naming the entry point),
  // whatever the Vulkan side then finds. The Vulkan side's own answer
  // (VK_KHR_external_semaphore_fd, exportable kinds) comes with its setup.
  auto uuid = selected_vulkan_uuid(ctx);
  if (!uuid) {
    rep.facts.fatal = "client: " + why_of(uuid.error());
    rep.facts.stop_kind = uuid.error().kind;
    return half.finish();
  }
  auto side = open_cuda(ctx, rep.facts, *uuid, kRegionSize);
  if (!side) return half.finish();
  const cuda::Api& api = *side->api;
  auto setup = half.start("the Vulkan side's allocation");
  if (!setup) return half.finish();
  const auto alloc_size = setup->info.allocation_size.value_or(std::uint64_t{0});
  if (alloc_size < layout.size) {
    rep.facts.fatal = fmt::format("server announced allocation {} < size {}", alloc_size, layout.size);
    return half.finish();
  }
  ImportedAllocation im;
  if (!import_allocation(ctx, api, *setup, rep, im)) return half.finish();
  const CUdeviceptr region = im.base + layout.offset(s1::kRegion);
  bool keep_memory = false;  // set when work that uses it could not be drained

  ctx.step("cuMemAlloc + cuMemsetD32(marker)");
  auto marker = cuda::DeviceBuffer::allocate(api, 256);
  Status marker_ok = marker ? Status{} : Status{marker.error()};
  if (marker) {
    if (CUresult m = api.cuMemsetD32((*marker)->ptr(), s1::kMarker, 1); m != CUDA_SUCCESS)
      marker_ok = cuda::cu_error(api, "cuMemsetD32(marker)", m);
  }
  if (!marker_ok) {
    rep.facts.fatal = "client: " + why_of(marker_ok.error());
    rep.facts.stop_kind = marker_ok.error().kind;
  } else {
    for (auto [kind, leg, label] : {std::tuple{&vksync::kBinaryOpaque, &wait_binary, "cudawait-binary"},
                                    std::tuple{&vksync::kTimelineOpaque, &wait_timeline, "cudawait-timeline"}}) {
      CudaConsumer subject(ctx, api, *kind, region, (*marker)->ptr());
      if (!run_proof(ctx, subject, *leg, rep, label, subject.fd_text())) keep_memory = true;
      if (subject.unsupported) rep.facts.unsupported = *subject.unsupported;
    }
    if (measure::enabled() && !keep_memory && !rep.facts.unsupported) CudaWakeTimer(ctx, api).run();
    if (!cudasignal_leg(ctx, api, region, rep, signal)) keep_memory = true;
  }
  if (!keep_memory) {
    (void)api.cuMemFree(im.base);
    (void)api.cuDestroyExternalMemory(im.ext);
  }
  return half.finish();
}

constexpr const SemaphoreKind* kKinds[] = {&vksync::kBinaryOpaque, &vksync::kTimelineOpaque};

constexpr FaultDef kFaults[] = {kCloseFdFault, s1::kNoSignalFault};

const RouteDef kS1CudaSemaphore{
    .row = "S1-cuda-semaphore",
    .group = "s1",
    // No extensions here: CUDA's answer comes first (see cuda_client); the Vulkan
    // server reports VK_KHR_external_semaphore_fd's absence itself.
    .needs = {.handle_types = needs::kOpaqueFdExportable, .cuda = true},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"exports the T1 allocation and semaphores; produces for CUDA's waits, waits for CUDA's signal",
               [](ChildContext& c) { return s1::vk_side_serve(c, kKinds); }},
    .client = {"imports them into CUDA; waits before a copy, writes and signals; drives the ordering proofs",
               cuda_client},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kS1CudaSemaphore, 270);

}  // namespace extmem::probe
