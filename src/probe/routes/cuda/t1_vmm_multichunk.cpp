// T1-cuda-vmm-multichunk: the server backs one virtual range
// (cuMemAddressReserve) with several cuMemCreate chunks of different sizes
// (routes/cuda/chunks.h), exports each as a POSIX fd and sends them one frame
// each (the setup carries chunk 0's, then one data frame per further chunk);
// the client reserves one range of its own and imports and maps every chunk at
// its offset. Both sides move bytes only by GPU copies. Every chunk boundary is
// checked both ways, and the whole range by the whole-allocation sweep: a peer
// that maps only the first chunk (openucx/ucx PR #11283) is FAIL at the second.
// Issue #19; docs/probe.md, "T1-cuda-vmm-multichunk".
#include <cstdint>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "extmem/core/pattern.h"
#include "probe/routes.h"
#include "probe/routes/cuda/chunks.h"
#include "probe/routes/cuda/measure.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/worker/half_end.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"cudaimport", true,
     "every chunk's fd imported and mapped at its offset in one range: region and whole-range GPU copies round-trip"},
    {"boundaries", true,
     "the bytes either side of every chunk boundary, written on one side, read on the other, both directions"},
};

// The seeds of the boundary fills: one per direction, varied by boundary so a
// window that shows another boundary's bytes does not match.
constexpr std::uint64_t kClientFillSeed = 0x4d43'4c49'0000'0000ull;
constexpr std::uint64_t kServerFillSeed = 0x4d43'5352'0000'0000ull;
// How long the client waits for each further chunk's fd frame, ms.
constexpr int kChunkFrameTimeoutMs = 10'000;

// One reserved range and the chunks mapped into it; unmapped, released and
// freed on destruction (mappings before handles: a mapping keeps its memory alive).
class ChunkedRange {
 public:
  explicit ChunkedRange(const cuda::Api& api) : api_(api) {}
  ~ChunkedRange() {
    for (const Mapped& m : mapped_) (void)api_.cuMemUnmap(va_ + m.offset, m.size);
    for (CUmemGenericAllocationHandle h : handles_) (void)api_.cuMemRelease(h);
    if (va_ != 0) (void)api_.cuMemAddressFree(va_, total_);
  }
  ChunkedRange(const ChunkedRange&) = delete;
  ChunkedRange& operator=(const ChunkedRange&) = delete;

  Status reserve(std::size_t total, std::size_t alignment) {
    if (CUresult r = api_.cuMemAddressReserve(&va_, total, alignment, 0, 0); r != CUDA_SUCCESS) {
      va_ = 0;
      return cuda::cu_error(api_, fmt::format("cuMemAddressReserve({} bytes)", total), r);
    }
    total_ = total;
    return {};
  }
  /// Takes ownership of `handle` (released on destruction) and maps it at `offset`, read-write for `device`.
  Status map(std::size_t index, CUmemGenericAllocationHandle handle, std::size_t offset, std::size_t size,
             CUdevice device) {
    handles_.push_back(handle);
    if (CUresult r = api_.cuMemMap(va_ + offset, size, 0, handle, 0); r != CUDA_SUCCESS)
      return cuda::cu_error(api_, fmt::format("cuMemMap(chunk {}: {} bytes at +{})", index, size, offset), r);
    mapped_.push_back({offset, size});
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (CUresult r = api_.cuMemSetAccess(va_ + offset, size, &access, 1); r != CUDA_SUCCESS)
      return cuda::cu_error(api_, fmt::format("cuMemSetAccess(chunk {}, READWRITE)", index), r);
    return {};
  }
  CUdeviceptr va() const { return va_; }

 private:
  struct Mapped {
    std::size_t offset, size;
  };
  const cuda::Api& api_;
  CUdeviceptr va_ = 0;
  std::size_t total_ = 0;
  std::vector<CUmemGenericAllocationHandle> handles_;
  std::vector<Mapped> mapped_;
};

std::string hex_offset(std::size_t v) { return fmt::format("+{} (0x{:x})", v, v); }

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int cuda_vmm_multichunk_server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  CudaServer server(ctx);
  if (!server.open(kRegionSize)) return 0;
  CudaSide& side = server.side();
  const cuda::Api& api = server.api();
  if (!server.require_vmm_posix_fd()) return 0;
  CUmemAllocationProp prop = posix_fd_allocation_prop(side.device);
  ctx.step("cuMemGetAllocationGranularity(MINIMUM)");
  std::size_t granularity = 0;
  if (CUresult r = api.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      r != CUDA_SUCCESS)
    return server.fail(cuda::cu_error(api, "cuMemGetAllocationGranularity(MINIMUM)", r));
  auto plan = chunks::plan(layout.size, granularity);
  if (!plan) return server.fail(plan.error());
  const std::size_t total = plan->total;

  ctx.step("cuMemAddressReserve(the whole range)");
  ChunkedRange range(api);
  if (auto s = range.reserve(total, granularity); !s) return server.fail(s.error());
  std::vector<CUmemGenericAllocationHandle> handles;
  for (std::size_t i = 0; i < plan->sizes.size(); ++i) {
    ctx.step(fmt::format("cuMemCreate(chunk {}, POSIX_FILE_DESCRIPTOR) + cuMemMap + cuMemSetAccess", i));
    CUmemGenericAllocationHandle h = 0;
    // Both attributes say yes, so a refusal is a driver failure, not an absent capability.
    if (CUresult r = api.cuMemCreate(&h, plan->sizes[i], &prop, 0); r != CUDA_SUCCESS)
      return server.fail(cuda::cu_error(
          api, fmt::format("cuMemCreate(chunk {}: {} bytes, POSIX_FILE_DESCRIPTOR)", i, plan->sizes[i]), r));
    handles.push_back(h);
    if (auto s = range.map(i, h, plan->offsets[i], plan->sizes[i], side.device); !s) return server.fail(s.error());
  }
  ctx.step("cuMemAlloc(staging for the whole range)");
  auto staging = cuda::DeviceBuffer::allocate(api, total);
  if (!staging) return server.fail(staging.error());

  // The CPU cannot map this memory: the server serves a mirror refreshed and published by GPU copies.
  std::vector<std::byte> mirror(total);
  ctx.step("write region A (GPU copy of the whole range)");
  pattern::fill(layout.region(std::span<std::byte>(mirror), Region::A), seed_of(Region::A));
  if (auto s = cuda::gpu_write(api, range.va(), **staging, mirror); !s) return server.fail(s.error());

  std::vector<os::UniqueFd> fds;
  nlohmann::json targets = nlohmann::json::array();
  for (std::size_t i = 0; i < handles.size(); ++i) {
    ctx.step(fmt::format("cuMemExportToShareableHandle(chunk {}, POSIX_FILE_DESCRIPTOR)", i));
    int raw = -1;
    if (CUresult r = api.cuMemExportToShareableHandle(&raw, handles[i], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        r != CUDA_SUCCESS)
      return server.fail(cuda::cu_error(api, fmt::format("cuMemExportToShareableHandle(chunk {})", i), r));
    fds.emplace_back(raw);
    ctx.step(fmt::format("post-export fd sanity (chunk {})", i));
    if (raw < 0 || !os::fd_is_open(raw))
      return server.fail(Error{fmt::format("cuMemExportToShareableHandle(chunk {})", i), ErrorKind::driver, {},
                               fmt::format("exported fd {} is not open", raw)});
    targets.push_back(os::fd_target(raw));
  }

  ctx.step("send the chunks' fds (the setup with chunk 0's, one frame per further chunk)");
  peer::SetupInfo info{.device_uuid = side.vulkan_uuid, .granularity = granularity};
  info.chunks = peer::ChunkList{{plan->sizes.begin(), plan->sizes.end()}, total, targets};
  if (!send_setup(ctx, info, fds[0].get())) return 1;
  for (std::size_t i = 1; i < fds.size(); ++i)
    if (!ctx.peer().send(os::MsgType::data, nlohmann::json{{"chunk", i}}.dump(), fds[i].get())) return 1;
  fds.clear();  // our copies; the peer holds its own

  ctx.step("serve the peer's checks (GPU copies to and from the whole range)");
  ServeSync sync;
  sync.refresh = [&] { return cuda::gpu_read(api, range.va(), **staging, mirror); };
  sync.publish = [&] { return cuda::gpu_write(api, range.va(), **staging, mirror); };
  // The client's boundary fills arrive as peer "fill" requests (peer_codec.h): serve() writes the
  // mirror and publishes it through this side's GPU.
  return serve(ctx, mirror, sync) ? 0 : 1;
}

namespace {
namespace EXTMEM_ROUTE_FILE {

// Both directions at every boundary window; fills `leg` (read_ok: every
// server fill seen by the client; write_ok: every client write seen by the
// server). The first failure names the boundary, the chunk and the offset.
void check_boundaries(ChildContext& ctx, const CudaSide& side, CUdeviceptr va, const chunks::Plan& plan, Leg& leg,
                      RouteReport& rep) {
  const cuda::Api& api = *side.api;
  leg.attempted = true;
  bool seen_by_client = true, seen_by_server = true;
  auto first_failure = [&](std::string step, std::string note) {
    if (!leg.failed_step.empty()) return;
    leg.failed_step = std::move(step);
    leg.note = std::move(note);
  };
  const auto windows = chunks::windows(plan);
  for (const chunks::Window& w : windows) {
    const std::string where = fmt::format("chunk boundary {} at {} (chunk {} | chunk {})", w.boundary,
                                          hex_offset(w.start + chunks::kBoundaryHalf), w.boundary - 1, w.boundary);
    std::vector<std::byte> bytes(w.length);
    // Client writes, server reads.
    ctx.step("client writes across " + where);
    pattern::fill(bytes, kClientFillSeed + w.boundary);
    if (auto s = cuda::gpu_write(api, va + w.start, *side.staging, bytes); !s) {
      fail_leg(leg, s.error());
      return;
    }
    ctx.step("server reads across " + where);
    std::vector<std::byte> got(w.length);
    auto n = peer_read(ctx, w.start, got);
    if (!n) {
      fail_leg(leg, n.error());
      return;
    }
    if (auto m = *n == got.size() ? pattern::first_mismatch(got, kClientFillSeed + w.boundary) : std::optional<std::size_t>{0}) {
      seen_by_server = false;
      const std::size_t at = w.start + *m;
      first_failure(where, fmt::format("the client's write at {} (chunk {}) is not what the server reads there",
                                       hex_offset(at), chunks::chunk_of(plan, at)));
    }
    // Server writes, client reads.
    ctx.step("server writes across " + where);
    auto filled = peer_fill(ctx, w.start, w.length, kServerFillSeed + w.boundary);
    if (!filled) {
      fail_leg(leg, filled.error());
      return;
    }
    ctx.step("client reads across " + where);
    if (auto s = cuda::gpu_read(api, va + w.start, *side.staging, got); !s) {
      fail_leg(leg, s.error());
      return;
    }
    if (auto m = pattern::first_mismatch(got, kServerFillSeed + w.boundary)) {
      seen_by_client = false;
      const std::size_t at = w.start + *m;
      first_failure(where, fmt::format("the server's write at {} (chunk {}) is not what the client reads there",
                                       hex_offset(at), chunks::chunk_of(plan, at)));
    }
  }
  leg.read_ok = seen_by_client;
  leg.write_ok = seen_by_server;
  if (leg.read_ok && leg.write_ok)
    rep.detail.push_back(fmt::format("boundaries: {} checked, {} bytes either side, both directions", windows.size(),
                                     chunks::kBoundaryHalf));
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

int cuda_vmm_multichunk_client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg cu = report_leg({EXTMEM_ROUTE_FILE::kLegs, "cudaimport"});
  Leg bounds = report_leg({EXTMEM_ROUTE_FILE::kLegs, "boundaries"});
  DrivingHalf half(ctx, {&cu, &bounds});
  RouteReport& rep = half.rep;
  auto setup = half.start("the server's chunks");
  if (!setup) return half.finish();
  const auto granularity = setup->info.granularity.value_or(std::size_t{0});
  const peer::ChunkList announced = setup->info.chunks.value_or(peer::ChunkList{});
  const std::vector<std::size_t> sizes(announced.sizes.begin(), announced.sizes.end());
  auto plan = chunks::from_sizes(sizes, granularity, layout.size);
  if (!plan) {
    rep.facts.fatal = "server announced: " + why_of(plan.error());
    rep.facts.stop_kind = plan.error().kind;
    return half.finish();
  }
  rep.detail.push_back(fmt::format("chunks={} granularity={} total={} fd={}", fmt::join(plan->sizes, "+"), granularity,
                                   plan->total, nlohmann::json(announced.fd_targets).dump()));
  std::vector<os::UniqueFd> fds;
  fds.push_back(std::move(setup->fd));
  for (std::size_t i = 1; i < plan->sizes.size(); ++i) {
    ctx.step(fmt::format("receive chunk {}'s fd", i));
    auto frame = ctx.peer().recv(kChunkFrameTimeoutMs);
    if (!frame) {
      rep.facts.fatal = fmt::format("client: chunk {}'s fd: {}", i, why_of(frame.error()));
      return half.finish();
    }
    if (frame->type != os::MsgType::data || !frame->fd.valid()) {
      rep.facts.fatal = fmt::format("client: chunk {}'s frame carried no fd (type {})", i, int(frame->type));
      return half.finish();
    }
    fds.push_back(std::move(frame->fd));
  }
  if (!fds[0].valid()) {
    rep.facts.fatal = "client: the setup carried no fd for chunk 0";
    return half.finish();
  }
  auto side = open_cuda(ctx, rep.facts, setup->info.device_uuid.value_or(std::string()), kRegionSize);
  if (!side) return half.finish();
  const cuda::Api& api = *side->api;

  ChunkedRange range(api);
  cu.attempted = true;
  // Test-only negative control (EXTMEM_TEST_FAULT=T1-cuda-vmm-multichunk:client:cuMemMap:firstchunk):
  // only chunk 0 is the imported one; the rest of the range is private memory of this process,
  // what a peer that imported only the first chunk's handle has (openucx/ucx PR #11283). Not left
  // unmapped: a copy from an unmapped address is a sticky fault that ends the CUDA context.
  const bool first_only = ctx.test_fault("cuMemMap + cuMemSetAccess (every chunk)", "firstchunk");
  ctx.step("cuMemAddressReserve(the whole range)");
  Status mapped = range.reserve(plan->total, granularity);
  std::vector<std::string> consumed;
  for (std::size_t i = 0; mapped && i < fds.size(); ++i) {
    CUmemGenericAllocationHandle h = 0;
    if (first_only && i > 0) {
      ctx.step(fmt::format("test fault firstchunk: cuMemCreate(private chunk {})", i));
      CUmemAllocationProp prop = posix_fd_allocation_prop(side->device);
      if (CUresult r = api.cuMemCreate(&h, plan->sizes[i], &prop, 0); r != CUDA_SUCCESS) {
        mapped = cuda::cu_error(api, fmt::format("cuMemCreate(private chunk {})", i), r);
        break;
      }
    } else {
      ctx.step(fmt::format("cuMemImportFromShareableHandle(chunk {}, POSIX_FILE_DESCRIPTOR)", i));
      CUresult r = api.cuMemImportFromShareableHandle(
          &h, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fds[i].get())), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      // As in T1-cuda-vmm-fd: record whether the driver took the fd, and never close one it closed.
      const bool open = os::fd_is_open(fds[i].get());
      consumed.push_back(open ? "no" : "yes");
      if (!open) (void)fds[i].release();
      if (r != CUDA_SUCCESS) {
        mapped = cuda::cu_error(api, fmt::format("cuMemImportFromShareableHandle(chunk {})", i), r);
        break;
      }
    }
    ctx.step(fmt::format("cuMemMap + cuMemSetAccess (every chunk): chunk {} at {}", i, hex_offset(plan->offsets[i])));
    mapped = range.map(i, h, plan->offsets[i], plan->sizes[i], side->device);
  }
  rep.detail.push_back(fmt::format("cudaimport fd-consumed={}{}", fmt::join(consumed, ","),
                                   first_only ? " (test fault firstchunk: chunks 1.. are private)" : ""));
  if (!mapped) {
    fail_leg(cu, mapped.error());
    bounds.note = "not run: the range is not mapped";
    return half.finish();
  }
  cuda_read_region(ctx, *side, range.va(), Region::A, cu);
  if (cuda_write_region(ctx, *side, range.va(), Region::E, cu)) {
    ctx.step("server checks region E (GPU copy out of its own range)");
    confirm_remote(ctx, Region::E, cu);
  }
  cuda_whole(ctx, *side, range.va(), plan->total, peer_far(ctx, plan->total), cu, rep);
  check_boundaries(ctx, *side, range.va(), *plan, bounds, rep);
  if (cu.read_ok && cu.write_ok && bounds.read_ok && bounds.write_ok && measure::enabled()) {
    if (LegFigures* m = measure::leg(cu.name)) m->gpu_shared_memory = "device-local";  // cuMemCreate'd device memory
    cuda_copy_leg(ctx, api, cu.name, range.va(), plan->total);
  }
  return half.finish();
}

namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr FaultDef kFaults[] = {
    corrupt_fault(Role::client),
    {"firstchunk", Role::client, "cuMemMap + cuMemSetAccess (every chunk)",
     "the client maps only chunk 0 of the server's chunks: the boundaries leg must not pass"},
};

const RouteDef kT1CudaVmmMultichunk{
    .row = "T1-cuda-vmm-multichunk",
    .group = "t1",
    .needs = {.cuda = true},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"backs one range with cuMemCreate chunks of different sizes, exports one POSIX fd each, serves",
               cuda_vmm_multichunk_server},
    .client = {"reserves one range, imports and maps every chunk at its offset, drives", cuda_vmm_multichunk_client},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1CudaVmmMultichunk, 160);

}  // namespace extmem::probe
