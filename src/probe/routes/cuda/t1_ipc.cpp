// T1-cuda-ipc: legacy CUDA IPC, what torch.multiprocessing uses with the
// default allocator. The server allocates with cuMemAlloc and sends
// cuIpcGetMemHandle's 64 bytes inside the setup (no fd crosses); the client
// opens them (cuIpcOpenMemHandle) and both sides move bytes only by GPU
// copies, regions and the whole allocation, both directions. Two more legs:
//   cudaoffset  the handle of a pointer inside the allocation (region D's
//               offset) opens at the allocation's base (cuda.h: the handle
//               names the allocation), so a view needs the offset sent beside
//               it (NVIDIA/Fuser PR #3799); the offset comes from the server's
//               cuMemGetAddressRange and both sides check the bytes at it
//   ipcevent    the ordering proof (probe/sync_proof.h) on an interprocess
//               event (cuIpcGetEventHandle / cuIpcOpenEventHandle): the server's
//               GPU write of region E and its cuEventRecord sit behind a gate
//               (cuStreamWaitValue32 on pinned host memory) that its host keeps
//               closed; the client's stream waits on the event
//               (cuStreamWaitEvent) before copying E out, and must not land
//               before the gate opens.
// Issue #19; docs/probe.md, "T1-cuda-ipc".
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/clock.h"
#include "probe/routes.h"
#include "probe/routes/cuda/measure.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/routes/cuda/stream_sync.h"
#include "probe/routes/s1/peer.h"
#include "probe/routes/s1/vk_side.h"
#include "probe/sync_proof.h"
#include "probe/worker/half_end.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"cudaipc", true, "the 64-byte cuIpcGetMemHandle opened in the other process: GPU copies round-trip, whole allocation"},
    {"cudaoffset", true,
     "the handle of a pointer inside the allocation, with the offset sent beside it: the bytes at that offset, both ways"},
    {"ipcevent", true,
     "the client's stream waited on the server's interprocess event: its copy landed only after the gated write"},
};

template <typename Handle>
std::string to_hex(const Handle& h) {
  std::string out;
  for (char c : h.reserved) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

// The handle a setup field carries (2 * CU_IPC_HANDLE_SIZE hex digits), or nullopt.
template <typename Handle>
std::optional<Handle> from_hex(const std::string& text) {
  if (text.size() != 2 * CU_IPC_HANDLE_SIZE) return std::nullopt;
  Handle h{};
  for (std::size_t i = 0; i < CU_IPC_HANDLE_SIZE; ++i) {
    unsigned v = 0;
    for (char c : text.substr(2 * i, 2)) {
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else return std::nullopt;
    }
    h.reserved[i] = static_cast<char>(v);
  }
  return h;
}

// A non-blocking stream and pinned host memory; released on destruction unless
// work could not be drained (then left alive: the GPU may still use them).
class StreamAndHost {
 public:
  explicit StreamAndHost(const cuda::Api& api) : api_(api) {}
  ~StreamAndHost() {
    if (leaked) return;
    if (stream != nullptr) (void)api_.cuStreamDestroy(stream);
    if (host != nullptr) (void)api_.cuMemFreeHost(host);
  }
  StreamAndHost(const StreamAndHost&) = delete;
  StreamAndHost& operator=(const StreamAndHost&) = delete;
  // Idempotent: the proof's calibration may have created them already.
  Status create(ChildContext& ctx, std::size_t bytes) {
    if (stream != nullptr) return {};
    ctx.step("cuStreamCreate(CU_STREAM_NON_BLOCKING) + cuMemAllocHost");
    if (CUresult r = api_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
      stream = nullptr;
      return cuda::cu_error(api_, "cuStreamCreate", r);
    }
    if (CUresult r = api_.cuMemAllocHost(&host, bytes); r != CUDA_SUCCESS) {
      host = nullptr;
      return cuda::cu_error(api_, fmt::format("cuMemAllocHost({} bytes)", bytes), r);
    }
    std::memset(host, 0, bytes);
    return {};
  }
  bool drain() {
    auto w = cuda_sync::poll_stream(api_, stream, std::chrono::milliseconds(5000));
    const bool ok = w && w->result == sync::WaitResult::signalled;
    if (!ok) leaked = true;
    return ok;
  }
  const cuda::Api& api_;
  CUstream stream = nullptr;
  void* host = nullptr;
  bool leaked = false;
};

// The server's producer of the ordering proof: "hold" queues gate -> write E -> record, "release" opens the gate.
class GatedProducer {
 public:
  GatedProducer(const cuda::Api& api, CUevent event, CUdeviceptr region) : side_(api), event_(event), region_(region) {}
  ~GatedProducer() {
    if (armed_ && !drained_) side_.leaked = true;  // a closed gate: the stream can never finish
  }
  // Host layout: the gate word, then the producer's region data.
  static constexpr std::size_t kDataAt = 256;

  Result<s1::Ok> hold(ChildContext& ctx) {
    const cuda::Api& api = side_.api_;
    if (armed_) return Error{"hold", ErrorKind::protocol, {}, "hold requested twice"};
    if (auto s = side_.create(ctx, kDataAt + kRegionSize); !s) return std::move(s).error();
    auto* bytes = static_cast<std::byte*>(side_.host);
    pattern::fill(std::span<std::byte>(bytes + kDataAt, kRegionSize), s1::kProducerSeed);
    std::vector<std::byte> stale(kRegionSize);
    pattern::fill(stale, s1::kStaleSeed);
    ctx.step("cuMemcpyHtoD(region E, stale pattern)");
    if (CUresult r = api.cuMemcpyHtoD(region_, stale.data(), kRegionSize); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuMemcpyHtoD(region E, stale pattern)", r);
    ctx.step("cuMemHostGetDevicePointer(gate)");
    CUdeviceptr gate = 0;
    if (CUresult r = api.cuMemHostGetDevicePointer(&gate, side_.host, 0); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuMemHostGetDevicePointer(gate)", r);
    ctx.step("cuStreamWaitValue32(gate >= 1) + cuMemcpyHtoDAsync(region E) + cuEventRecord(interprocess event)");
    if (CUresult r = api.cuStreamWaitValue32(side_.stream, gate, 1, CU_STREAM_WAIT_VALUE_GEQ); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuStreamWaitValue32(gate >= 1)", r);
    armed_ = true;
    if (CUresult r = api.cuMemcpyHtoDAsync(region_, bytes + kDataAt, kRegionSize, side_.stream); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuMemcpyHtoDAsync(region E)", r);
    if (CUresult r = api.cuEventRecord(event_, side_.stream); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuEventRecord(interprocess event)", r);
    return s1::Ok{};
  }
  s1::Released release(ChildContext& ctx) {
    ctx.step("open the gate (host store of 1)");
    const double t = os::monotonic_seconds();
    open_gate();
    return s1::Released{t};
  }
  /// The gated work is queued and the gate shut: a cuCtxSynchronize now would wait for ever.
  bool gated() const { return armed_ && !gate_open_; }
  s1::Drained drain() {
    open_gate();
    drained_ = !armed_ || side_.drain();
    return s1::Drained{.drained = drained_};
  }

 private:
  void open_gate() {
    if (side_.host == nullptr) return;
    gate_open_ = true;
    // The GPU polls this word in host memory: a plain store could sit in a register.
    std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(side_.host)).store(1, std::memory_order_seq_cst);
  }
  StreamAndHost side_;
  CUevent event_;
  CUdeviceptr region_;
  bool armed_ = false;
  bool gate_open_ = false;
  bool drained_ = false;
};

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int cuda_ipc_server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  CudaServer server(ctx);
  if (!server.open(layout.size)) return 0;
  CudaSide& side = server.side();
  const cuda::Api& api = server.api();
  const int ipc_event = side.attribute(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED);
  if (ipc_event != 1) {
    return server.unsupported(fmt::format("CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED={}", ipc_event));
  }
  ctx.step("cuMemAlloc(the shared allocation)");
  auto mem = cuda::DeviceBuffer::allocate(api, layout.size);
  if (!mem) return server.fail(mem.error());
  const CUdeviceptr base = (*mem)->ptr();
  std::vector<std::byte> mirror(layout.size);
  ctx.step("write region A (GPU copy)");
  pattern::fill(layout.region(std::span<std::byte>(mirror), Region::A), seed_of(Region::A));
  if (auto s = cuda::gpu_write(api, base, *side.staging, mirror); !s) return server.fail(s.error());

  ctx.step("cuIpcGetMemHandle(allocation base)");
  CUipcMemHandle handle{};
  if (CUresult r = api.cuIpcGetMemHandle(&handle, base); r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, "cuIpcGetMemHandle", r));
  peer::SetupInfo info{.allocation_size = layout.size, .device_uuid = side.vulkan_uuid};
  peer::IpcHandles& ipc = info.ipc.emplace();
  ipc.mem_handle = to_hex(handle);

  // The view inside the allocation: its own handle (if the driver gives one) and its offset from the base.
  const std::size_t view_off = layout.offset(Region::D);
  ctx.step(fmt::format("cuIpcGetMemHandle(pointer at +{}) + cuMemGetAddressRange", view_off));
  CUipcMemHandle view_handle{};
  if (CUresult r = api.cuIpcGetMemHandle(&view_handle, base + view_off); r != CUDA_SUCCESS)
    ipc.view_handle_error = why_of(cuda::cu_error(api, fmt::format("cuIpcGetMemHandle(base + {})", view_off), r));
  else
    ipc.view_handle = to_hex(view_handle);
  CUdeviceptr range_base = 0;
  std::size_t range_size = 0;
  if (CUresult r = api.cuMemGetAddressRange(&range_base, &range_size, base + view_off); r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, "cuMemGetAddressRange(view)", r));
  ipc.view_offset = base + view_off - range_base;
  ipc.range_size = range_size;

  ctx.step("cuEventCreate(INTERPROCESS | DISABLE_TIMING) + cuIpcGetEventHandle");
  CUevent event = nullptr;
  if (CUresult r = api.cuEventCreate(&event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, "cuEventCreate(INTERPROCESS | DISABLE_TIMING)", r));
  struct EventGuard {
    const cuda::Api& api;
    CUevent e;
    bool keep = false;
    ~EventGuard() {
      if (!keep) (void)api.cuEventDestroy(e);
    }
  } event_guard{api, event};
  CUipcEventHandle event_handle{};
  if (CUresult r = api.cuIpcGetEventHandle(&event_handle, event); r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, "cuIpcGetEventHandle", r));
  ipc.event_handle = to_hex(event_handle);

  ctx.step("send the IPC handles (bytes in the setup, no fd)");
  if (!send_setup(ctx, info, -1)) return 1;

  ctx.step("serve the peer's checks (GPU copies to and from the allocation)");
  GatedProducer producer(api, event, base + layout.offset(s1::kRegion));
  ServeSync sync;
  // gpu_read ends in cuCtxSynchronize, which would wait on the gated stream: while the gate is
  // shut (between "hold" and "release") the mirror is left as it is (only the proof's ops come then).
  sync.refresh = [&]() -> Status {
    if (producer.gated()) return {};
    return cuda::gpu_read(api, base, *side.staging, mirror);
  };
  sync.publish = [&] { return cuda::gpu_write(api, base, *side.staging, mirror); };
  bool drained = true;
  // The ordering proof's requests (s1/codec.h) arrive as this route's own ops.
  sync.extra = [&](const std::string&, const nlohmann::json& body, os::UniqueFd&) -> std::optional<Result<nlohmann::json>> {
    auto req = s1::decode_request(body.dump());
    if (!req) return Result<nlohmann::json>(s1::body(s1::refusal_of(req.error())));
    if (std::holds_alternative<s1::Hold>(*req)) {
      auto r = producer.hold(ctx);
      if (!r) return Result<nlohmann::json>(s1::body(s1::refusal_of(r.error())));
      drained = false;
      return Result<nlohmann::json>(s1::body(*r));
    }
    if (std::holds_alternative<s1::Release>(*req)) return Result<nlohmann::json>(s1::body(producer.release(ctx)));
    if (std::holds_alternative<s1::Drain>(*req)) {
      s1::Drained d = producer.drain();
      drained = d.drained;
      return Result<nlohmann::json>(s1::body(d));
    }
    return std::nullopt;
  };
  const bool served = static_cast<bool>(serve(ctx, mirror, sync));
  if (!drained) {
    // Work that uses the allocation and the event may still be queued: leave them to the process's end.
    event_guard.keep = true;
    (void)mem->release();
  }
  return served ? 0 : 1;
}

namespace {
namespace EXTMEM_ROUTE_FILE {

// The client's consumer of the ordering proof.
class IpcEventConsumer final : public sync::OrderingSubject {
 public:
  static constexpr std::size_t kHostBytes = kRegionSize + 256;
  IpcEventConsumer(ChildContext& ctx, const cuda::Api& api, CUevent event, CUdeviceptr region, CUdeviceptr marker)
      : ctx_(ctx), side_(api), event_(event), region_(region), marker_(marker) {}

  Status hold() override {
    if (auto s = side_.create(ctx_, kHostBytes); !s) return s;
    auto r = s1::ask(ctx_, s1::Hold{.kind = "ipc-event"});  // the sync object is the IPC event, not a semaphore
    if (!r) return std::move(r).error();
    return {};
  }
  Result<sync::Waited> ungated_copy(std::chrono::milliseconds bound) override {
    if (auto s = side_.create(ctx_, kHostBytes); !s) return std::move(s).error();
    ctx_.step("cuMemcpyDtoHAsync(region E) + marker, no wait");
    armed_ = true;
    if (auto s = cuda_sync::copy_out_with_marker(side_.api_, side_.stream, side_.host, region_, marker_); !s)
      return std::move(s).error();
    auto w = cuda_sync::poll_stream(side_.api_, side_.stream, bound);
    if (w && w->result == sync::WaitResult::signalled) std::memset(side_.host, 0, kHostBytes);
    return w;
  }
  Status arm() override {
    const cuda::Api& api = side_.api_;
    ctx_.step("cuStreamWaitEvent(interprocess event) + cuMemcpyDtoHAsync(region E) + marker");
    if (CUresult r = api.cuStreamWaitEvent(side_.stream, event_, 0); r != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuStreamWaitEvent(interprocess event)", r);
    armed_ = true;
    return cuda_sync::copy_out_with_marker(api, side_.stream, side_.host, region_, marker_);
  }
  Result<sync::Observation> observe() override {
    return cuda_sync::observe(side_.api_, side_.stream, side_.host);  // an event has no counter to read
  }
  Result<sync::Waited> wait_consumer(std::chrono::milliseconds bound) override {
    return cuda_sync::poll_stream(side_.api_, side_.stream, bound);
  }
  Status release() override { return s1::release_producer(ctx_); }
  Result<sync::CopyCheck> check_copy() override { return s1::check_producer_copy(side_.host); }
  bool drain() override {
    auto r = s1::ask(ctx_, s1::Drain{});
    const bool peer = r && r->drained;
    return (!armed_ || side_.drain()) && peer;
  }

 private:
  ChildContext& ctx_;
  StreamAndHost side_;
  CUevent event_;
  CUdeviceptr region_;
  CUdeviceptr marker_;
  bool armed_ = false;
};

// The view at an offset (docs/probe.md, "CUDA views at an offset"): opens the handle the server
// took of a pointer inside the allocation and checks the bytes at the server's offset both ways.
void offset_view(ChildContext& ctx, const CudaSide& side, const Setup& setup, CUdeviceptr opened_base, Leg& leg,
                 RouteReport& rep) {
  const cuda::Api& api = *side.api;
  const Layout& layout = ctx.layout();
  leg.attempted = true;
  const peer::IpcHandles ipc = setup.info.ipc.value_or(peer::IpcHandles{});
  const std::size_t off = ipc.view_offset;
  std::string how;
  CUdeviceptr view_open = opened_base;
  bool close_view = false;
  if (auto vh = from_hex<CUipcMemHandle>(ipc.view_handle.value_or(""))) {
    ctx.step(fmt::format("cuIpcOpenMemHandle(handle of the pointer at +{})", layout.offset(Region::D)));
    if (CUresult r = api.cuIpcOpenMemHandle(&view_open, *vh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS); r != CUDA_SUCCESS) {
      fail_leg(leg, cuda::cu_error(api, "cuIpcOpenMemHandle(view handle)", r));
      return;
    }
    close_view = true;
    how = fmt::format("view handle {} the base's; opened at {}", ipc.view_handle == ipc.mem_handle
                                                                     ? "equals"
                                                                     : "differs from",
                      view_open == opened_base ? "the allocation base" : fmt::format("base{:+}", static_cast<long long>(view_open - opened_base)));
  } else {
    how = "no view handle (" + ipc.view_handle_error.value_or("?") + "): the base's handle";
  }
  // The region helpers address base + layout.offset(region); the view is at view_open + off.
  const CUdeviceptr view = view_open + off;
  const CUdeviceptr as_base = view - layout.offset(Region::D);
  if (cuda_write_region(ctx, side, as_base, Region::D, leg)) {
    ctx.step("server checks region D (written through the view at the offset)");
    confirm_remote(ctx, Region::D, leg);
  }
  ctx.step("server writes region F");
  if (auto s = peer_write(ctx, Region::F); !s) fail_leg(leg, s.error());
  else cuda_read_region(ctx, side, as_base, Region::F, leg);
  rep.detail.push_back(fmt::format("cudaoffset: {}; offset {} from the server's cuMemGetAddressRange", how, off));
  if (close_view) (void)api.cuIpcCloseMemHandle(view_open);  // one close per open (the handle is reference counted)
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int cuda_ipc_client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg ipc = report_leg({EXTMEM_ROUTE_FILE::kLegs, "cudaipc"});
  Leg offv = report_leg({EXTMEM_ROUTE_FILE::kLegs, "cudaoffset"});
  Leg order = report_leg({EXTMEM_ROUTE_FILE::kLegs, "ipcevent"});
  DrivingHalf half(ctx, {&ipc, &offv, &order});
  RouteReport& rep = half.rep;
  auto setup = half.start("the server's IPC handles");
  if (!setup) return half.finish();
  const auto size = setup->info.allocation_size.value_or(std::size_t{0});
  const peer::IpcHandles handles = setup->info.ipc.value_or(peer::IpcHandles{});
  auto handle = from_hex<CUipcMemHandle>(handles.mem_handle);
  auto event_handle = from_hex<CUipcEventHandle>(handles.event_handle);
  if (size < layout.size || !handle || !event_handle) {
    rep.facts.fatal = fmt::format("server announced allocation {} for size {} and {} handles", size, layout.size,
                                  handle && event_handle ? "well-formed" : "malformed");
    return half.finish();
  }
  rep.detail.push_back(fmt::format("allocation={} handle-bytes={} (no fd)", size, CU_IPC_HANDLE_SIZE));
  auto side = open_cuda(ctx, rep.facts, setup->info.device_uuid.value_or(std::string()), kRegionSize);
  if (!side) return half.finish();
  const cuda::Api& api = *side->api;

  ctx.step("cuIpcOpenMemHandle(LAZY_ENABLE_PEER_ACCESS)");
  ipc.attempted = true;
  CUdeviceptr ptr = 0;
  if (CUresult r = api.cuIpcOpenMemHandle(&ptr, *handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS); r != CUDA_SUCCESS) {
    fail_leg(ipc, cuda::cu_error(api, "cuIpcOpenMemHandle", r));
    return half.finish();
  }
  cuda_read_region(ctx, *side, ptr, Region::A, ipc);
  if (cuda_write_region(ctx, *side, ptr, Region::E, ipc)) {
    ctx.step("server checks region E (GPU copy out of its allocation)");
    confirm_remote(ctx, Region::E, ipc);
  }
  cuda_whole(ctx, *side, ptr, layout.size, peer_far(ctx, layout.size), ipc, rep);
  if (ipc.read_ok && ipc.write_ok && measure::enabled()) {
    if (LegFigures* m = measure::leg(ipc.name)) m->gpu_shared_memory = "device-local";  // the server's cuMemAlloc
    cuda_copy_leg(ctx, api, ipc.name, ptr, layout.size);
  }
  if (ipc.read_ok) offset_view(ctx, *side, *setup, ptr, offv, rep);

  ctx.step("cuIpcOpenEventHandle");
  order.attempted = true;
  CUevent event = nullptr;
  bool keep = false;  // set when work that uses the mapping or the event could not be drained
  if (CUresult r = api.cuIpcOpenEventHandle(&event, *event_handle); r != CUDA_SUCCESS) {
    fail_leg(order, cuda::cu_error(api, "cuIpcOpenEventHandle", r));
  } else {
    ctx.step("cuMemAlloc + cuMemsetD32(marker)");
    auto marker = cuda::DeviceBuffer::allocate(api, 256);
    Status marker_ok = marker ? Status{} : Status{marker.error()};
    if (marker)
      if (CUresult m = api.cuMemsetD32((*marker)->ptr(), s1::kMarker, 1); m != CUDA_SUCCESS)
        marker_ok = cuda::cu_error(api, "cuMemsetD32(marker)", m);
    if (!marker_ok) {
      fail_leg(order, marker_ok.error());
    } else {
      IpcEventConsumer subject(ctx, api, event, ptr + layout.offset(s1::kRegion), (*marker)->ptr());
      sync::ProofOutcome o = sync::prove_ordering(subject, s1::proof_config(), s1::step_sink, &ctx);
      s1::record_proof(o, order, rep.facts);
      rep.detail.push_back("ipcevent: " + s1::proof_detail(o, false, 0));
      keep = !o.drained;
      if (keep) (void)marker->release();
    }
    if (!keep) (void)api.cuEventDestroy(event);
  }
  if (!keep) (void)api.cuIpcCloseMemHandle(ptr);
  return half.finish();
}

namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr FaultDef kFaults[] = {corrupt_fault(Role::client)};

const RouteDef kT1CudaIpc{
    .row = "T1-cuda-ipc",
    .group = "t1",
    .needs = {.cuda = true},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"allocates with cuMemAlloc, sends the IPC memory and event handles as bytes, serves; produces behind a gate",
               cuda_ipc_server},
    .client = {"opens the handles, drives; waits on the event before its copy", cuda_ipc_client}};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1CudaIpc, 150);

}  // namespace extmem::probe
