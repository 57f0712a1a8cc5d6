// T1-opaque-fd-cuda: the server's Vulkan OPAQUE_FD export (as in T1-opaque-fd)
// imported by the client into CUDA (cuImportExternalMemory +
// cuExternalMemoryGetMappedBuffer). Two readings of the same import:
//   cudaimport (informational)  no synchronisation between the APIs: the
//       client's GPU reads region A and writes region E through a staging
//       buffer, the server checks E through its Vulkan mapping, then the whole
//       allocation is swept. CUDA defines its view of imported memory only after
//       an external-semaphore wait, so this is what a user who skips it sees.
//   cudasync (decisive)  the same checks on regions B and C, and a sweep with
//       other stamps, every handover ordered as the APIs define: the server's
//       timeline semaphore (cuda/vk_handover.h) imported into CUDA, signalled by
//       Vulkan after the server's CPU writes and waited on by CUDA's stream
//       before its reads; signalled by CUDA after its writes and waited on by
//       Vulkan before the server's CPU reads.
// Issue #4, #34; docs/probe.md, "T1".
#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/cuda/measure.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/routes/cuda/vk_handover.h"
#include "probe/routes/cuda/handover_codec.h"
#include "probe/routes/s1/peer.h"
#include "probe/routes/vk/export.h"
#include "probe/worker/peer.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kOpaqueFdCudaLegs[] = {
    {"cudaimport", false,
     "the Vulkan export imported into CUDA, used with no synchronisation between the APIs: the GPU reads and writes "
     "it, seen by the exporter, whole allocation"},
    {"cudasync", true,
     "the same import used as the APIs specify: every handover ordered by the exporter's timeline semaphore imported "
     "into CUDA; the GPU reads and writes it, seen by the exporter, whole allocation"},
    {"cudaoffset", true,
     "a second CUDA view at region D's offset reads and writes the bytes at that offset, not at the base"},
};

// One timed import of a fresh dup() of `fd` (cuImportExternalMemory +
// cuExternalMemoryGetMappedBuffer of `mapped` bytes, µs), undone untimed.
Result<double> import_once(const cuda::Api& api, int fd, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC& like,
                           std::size_t mapped) {
  auto dup = ImportDup::of(fd);
  if (!dup) return std::move(dup).error();
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc = like;
  desc.handle.fd = dup->number();
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.size = mapped;
  CUexternalMemory ext = nullptr;
  CUdeviceptr ptr = 0;
  const double t0 = os::monotonic_seconds();
  CUresult r = api.cuImportExternalMemory(&ext, &desc);
  CUresult m = r == CUDA_SUCCESS ? api.cuExternalMemoryGetMappedBuffer(&ptr, ext, &bd) : r;
  const double t1 = os::monotonic_seconds();
  (void)dup->settle(r == CUDA_SUCCESS);  // a successful import owns the fd (cuda.h, cuImportExternalMemory)
  if (r != CUDA_SUCCESS) return cuda::cu_error(api, "cuImportExternalMemory(OPAQUE_FD)", r);
  if (m == CUDA_SUCCESS) (void)api.cuMemFree(ptr);
  (void)api.cuDestroyExternalMemory(ext);
  if (m != CUDA_SUCCESS) return cuda::cu_error(api, "cuExternalMemoryGetMappedBuffer", m);
  return (t1 - t0) * 1e6;
}

// The importer's half of the handover (cuda/vk_handover.h): the exporter's timeline
// imported into CUDA. Every CUDA access of these legs runs on the legacy default
// stream (cuda::gpu_read/gpu_write, cuda_whole), so a wait or signal queued there
// orders them. Values increase by one per handover, chosen here.
class CudaHandover {
 public:
  CudaHandover(ChildContext& ctx, const cuda::Api& api) : ctx_(ctx), api_(api) {}
  ~CudaHandover() {
    if (sem_ != nullptr && !pending_) (void)api_.cuDestroyExternalSemaphore(sem_);
  }
  CudaHandover(const CudaHandover&) = delete;
  CudaHandover& operator=(const CudaHandover&) = delete;

  // Asks the exporter for its timeline's fd and imports it. An exporter that cannot
  // offer one answers unsupported (the error's kind).
  Status open() {
    ctx_.step("handover: receive the exporter's timeline semaphore");
    os::UniqueFd fd;
    if (auto r = ask(handover::Export{}, &fd); !r) return r;
    if (!fd.valid()) return Error{"handover: receive the semaphore fd", ErrorKind::protocol, {}, "no fd with the reply"};
    auto dup = ImportDup::of(fd.get());
    if (!dup) return std::move(dup).error();
    ctx_.step("cuImportExternalSemaphore(TIMELINE_SEMAPHORE_FD)");
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
    desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
    desc.handle.fd = dup->number();
    CUresult r = api_.cuImportExternalSemaphore(&sem_, &desc);
    (void)dup->settle(r == CUDA_SUCCESS);  // a successful import owns the fd (cuda.h)
    if (r != CUDA_SUCCESS) {
      sem_ = nullptr;
      return cuda::cu_error(api_, "cuImportExternalSemaphore(TIMELINE_SEMAPHORE_FD)", r);
    }
    return {};
  }
  // The exporter signals after its CPU writes; CUDA's stream waits for that value.
  Status acquire() {
    const std::uint64_t v = ++value_;
    if (auto r = ask(handover::Signal{v}, nullptr); !r) return r;
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wp{};
    wp.params.fence.value = v;
    if (CUresult r = api_.cuWaitExternalSemaphoresAsync(&sem_, &wp, 1, nullptr); r != CUDA_SUCCESS)
      return cuda::cu_error(api_, fmt::format("cuWaitExternalSemaphoresAsync(value {})", v), r);
    return {};
  }
  // CUDA signals after its writes; the exporter waits for that value before its CPU reads.
  Status release() {
    const std::uint64_t v = ++value_;
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS sp{};
    sp.params.fence.value = v;
    if (CUresult r = api_.cuSignalExternalSemaphoresAsync(&sem_, &sp, 1, nullptr); r != CUDA_SUCCESS)
      return cuda::cu_error(api_, fmt::format("cuSignalExternalSemaphoresAsync(value {})", v), r);
    if (auto r = ask(handover::Wait{v}, nullptr); !r) {
      pending_ = true;  // the exporter may still wait on it
      return r;
    }
    return {};
  }
  Handover hooks() {
    // Other stamps than cudaimport's sweep: a stale cache line cannot pass this one.
    return Handover{[this] { return acquire(); }, [this] { return release(); }, 0x73796e63ull};
  }

 private:
  // The exporter's refusal comes back with its step, the driver's code and
  // kind unsupported when the capability was not offered (s1::decode_reply).
  Status ask(const handover::Request& req, os::UniqueFd* fd) {
    auto frame = s1::exchange(ctx_, handover::op_of(req), handover::body(req).dump(), fd);
    if (!frame) return std::move(frame).error();
    auto r = s1::decode_reply<s1::Ok>(frame->payload);
    if (!r) return std::move(r).error();
    return {};
  }
  ChildContext& ctx_;
  const cuda::Api& api_;
  CUexternalSemaphore sem_ = nullptr;
  std::uint64_t value_ = 0;
  bool pending_ = false;
};

// The offset view (docs/probe.md, "CUDA views at an offset"): a second mapped buffer whose
// offset is region D's, not 0. A driver that maps the allocation's base whatever the offset
// passes every check made at offset 0; here the view's first bytes must be region D's and its
// bytes further in must be the server's region F, both at their offsets in the allocation.
// Each handover is ordered by `h`, as in the cudasync leg.
void offset_view(ChildContext& ctx, const CudaSide& side, CUexternalMemory ext, CudaHandover& h, Leg& leg,
                 RouteReport& rep) {
  const Layout& layout = ctx.layout();
  const cuda::Api& api = *side.api;
  const std::size_t off = layout.offset(Region::D);
  const std::size_t span = layout.offset(Region::F) + kRegionSize - off;  // D, E and F
  leg.attempted = true;
  ctx.step(fmt::format("cuExternalMemoryGetMappedBuffer(offset {})", off));
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.offset = off;
  bd.size = span;
  CUdeviceptr view = 0;
  if (CUresult m = api.cuExternalMemoryGetMappedBuffer(&view, ext, &bd); m != CUDA_SUCCESS) {
    // The offset is a multiple of 4096 inside the allocation, which satisfies the Vulkan buffer
    // alignment CUDA asks the offset to match (cuda.h), so a refusal is the leg's failure.
    fail_leg(leg, cuda::cu_error(api, fmt::format("cuExternalMemoryGetMappedBuffer(offset {})", off), m));
    return;
  }
  // The region helpers address base + layout.offset(region); a base `off` bytes before the view
  // makes them address the view at (region offset - off), i.e. the same allocation offset.
  const CUdeviceptr base = view - off;
  if (cuda_write_region(ctx, side, base, Region::D, leg)) {
    if (auto s = h.release(); !s) {
      fail_leg(leg, s.error());
      (void)api.cuMemFree(view);
      return;
    }
    ctx.step("server checks region D (written through the offset view)");
    confirm_remote(ctx, Region::D, leg);
  }
  ctx.step("server writes region F");
  if (auto s = peer_write(ctx, Region::F); !s) {
    fail_leg(leg, s.error());
  } else if (auto acquired = h.acquire(); !acquired) {
    fail_leg(leg, acquired.error());
  } else {
    cuda_read_region(ctx, side, base, Region::F, leg);
  }
  rep.detail.push_back(fmt::format("cudaoffset: view at {} of {} bytes", off, span));
  (void)api.cuMemFree(view);
}

// The cudasync leg (see the file comment) on the import mapped at `ptr`.
bool handover_leg(ChildContext& ctx, const CudaSide& side, CUdeviceptr ptr, CudaHandover& h, Leg& leg, RouteReport& rep) {
  leg.attempted = true;
  if (auto st = h.open(); !st) {
    if (st.error().kind == ErrorKind::unsupported)
      rep.facts.unsupported = "the ordering the APIs define is not available: " + why_of(st.error());
    fail_leg(leg, st.error());
    return false;
  }
  // Region B: the exporter's CPU writes it now; CUDA reads it after the exporter's signal.
  ctx.step("server writes region B");
  auto failed = [&](const Error& e) {
    fail_leg(leg, e);
    return false;
  };
  if (auto s = peer_write(ctx, Region::B); !s) return failed(s.error());
  if (auto s = h.acquire(); !s) return failed(s.error());
  cuda_read_region(ctx, side, ptr, Region::B, leg);
  // Region C: CUDA writes it; the exporter checks it after waiting for CUDA's signal.
  if (cuda_write_region(ctx, side, ptr, Region::C, leg)) {
    if (auto s = h.release(); !s) return failed(s.error());
    ctx.step("server checks region C through its Vulkan mapping");
    confirm_remote(ctx, Region::C, leg);
  }
  const std::size_t size = ctx.layout().size;
  cuda_whole(ctx, side, ptr, size, peer_far(ctx, size), leg, rep, h.hooks());
  return true;
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int cuda_opaque_fd_client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg cu = report_leg({EXTMEM_ROUTE_FILE::kOpaqueFdCudaLegs, "cudaimport"});
  Leg hs = report_leg({EXTMEM_ROUTE_FILE::kOpaqueFdCudaLegs, "cudasync"});
  Leg offv = report_leg({EXTMEM_ROUTE_FILE::kOpaqueFdCudaLegs, "cudaoffset"});
  DrivingHalf half(ctx, {&cu, &hs, &offv});
  RouteReport& rep = half.rep;
  auto setup = half.start("the server's export");
  if (!setup) return half.finish();
  const auto alloc_size = setup->info.allocation_size.value_or(std::uint64_t{0});
  const bool dedicated = setup->info.dedicated.value_or(false);
  const std::string uuid = setup->info.device_uuid.value_or(std::string());
  rep.detail.push_back(fmt::format("allocation={} dedicated={}", alloc_size, dedicated ? "yes" : "no"));

  auto side = open_cuda(ctx, rep.facts, uuid, kRegionSize);
  if (!side) return half.finish();
  const cuda::Api& api = *side->api;

  auto dup = ImportDup::of(setup->fd.get());
  if (!dup) {
    fail_leg(cu, dup.error());
    return half.finish();
  }
  ctx.step("cuImportExternalMemory(OPAQUE_FD)");
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = dup->number();
  desc.size = alloc_size;
  // CUDA must be told what Vulkan did (cuda.h, CUDA_EXTERNAL_MEMORY_DEDICATED).
  desc.flags = dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
  CUexternalMemory ext = nullptr;
  CUresult r = api.cuImportExternalMemory(&ext, &desc);
  // A successful import owns the fd (cuda.h, cuImportExternalMemory).
  rep.detail.push_back("cudaimport " + dup->settle(r == CUDA_SUCCESS));
  if (r != CUDA_SUCCESS) {
    fail_leg(cu, cuda::cu_error(api, "cuImportExternalMemory(OPAQUE_FD)", r));
    return half.finish();
  }
  ctx.step("cuExternalMemoryGetMappedBuffer");
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.offset = 0;
  bd.size = layout.size;
  CUdeviceptr ptr = 0;
  if (CUresult m = api.cuExternalMemoryGetMappedBuffer(&ptr, ext, &bd); m != CUDA_SUCCESS) {
    fail_leg(cu, cuda::cu_error(api, "cuExternalMemoryGetMappedBuffer", m));
  } else {
    cuda_read_region(ctx, *side, ptr, Region::A, cu);
    if (cuda_write_region(ctx, *side, ptr, Region::E, cu)) {
      ctx.step("server checks region E through its Vulkan mapping");
      confirm_remote(ctx, Region::E, cu);
    }
    cuda_whole(ctx, *side, ptr, layout.size, peer_far(ctx, layout.size), cu, rep);
    CudaHandover h(ctx, api);
    const bool opened = handover_leg(ctx, *side, ptr, h, hs, rep);
    if (hs.read_ok && hs.write_ok && measure::enabled()) {
      cuda_copy_leg(ctx, api, hs.name, ptr, layout.size);
      ctx.step("measure import latency (cudasync)");
      measure::import_latency(hs.name, [&] { return import_once(api, setup->fd.get(), desc, layout.size); });
    }
    (void)api.cuMemFree(ptr);  // a mapped buffer is freed with cuMemFree (cuda.h)
    if (opened && hs.read_ok) offset_view(ctx, *side, ext, h, offv, rep);
  }
  (void)api.cuDestroyExternalMemory(ext);
  return half.finish();
}

namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr FaultDef kFaults[] = {kCloseFdFault, corrupt_fault(Role::client)};

const RouteDef kT1OpaqueFdCuda{
    .row = "T1-opaque-fd-cuda",
    .group = "t1",
    .needs = {.extensions = needs::kFdMemory, .handle_types = needs::kOpaqueFdExportable, .cuda = true},
    .legs = kOpaqueFdCudaLegs,
    .faults = kFaults,
    .server = {"allocates Vulkan memory, exports an opaque fd, serves",
               [](ChildContext& c) { return export_and_serve_with_handover(c, kOpaqueFd); }},
    .client = {"imports the fd into CUDA, drives", cuda_opaque_fd_client},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1OpaqueFdCuda, 120);

}  // namespace extmem::probe
