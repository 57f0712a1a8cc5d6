#include "probe/routes/cuda/route_util.h"

#include "cuda/sweep_kernels.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/vulkan/enumerate.h"
#include "probe/routes.h"
#include "probe/worker/drivers.h"
#include "probe/worker/gpu_access.h"
#include "probe/worker/peer.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {

int CudaSide::attribute(CUdevice_attribute a) const {
  int v = -1;
  return api->cuDeviceGetAttribute(&v, a, device) == CUDA_SUCCESS ? v : -1;
}

std::optional<CudaSide> open_cuda(ChildContext& ctx, RouteFacts& facts, const std::string& vulkan_uuid,
                                  std::size_t staging_bytes) {
  const std::string who = to_string(ctx.params().role);
  ctx.step("load " + cuda::driver_library_name());
  auto api = cuda::load();
  if (!api) {
    const Error& e = api.error();
    stop_row(facts, e.kind,
             e.kind == ErrorKind::no_driver ? no_cuda_driver_reason(e)
                                            : fmt::format("{}: {} -> {} ({})", who, e.step, e.code, e.detail));
    return std::nullopt;
  }
  CudaSide side;
  side.api = std::move(*api);
  ctx.step("cuInit + match the CUDA device by deviceUUID");
  auto dev = cuda::device_for_vulkan_uuid(*side.api, vulkan_uuid);
  if (!dev) {
    const Error& e = dev.error();  // no_driver from cuInit: no usable CUDA here (stub library, no device, ...)
    stop_row(facts, e.kind, e.kind == ErrorKind::no_driver ? no_cuda_driver_reason(e) : who + ": " + why_of(e));
    return std::nullopt;
  }
  side.device = *dev;
  side.vulkan_uuid = vulkan_uuid;
  ctx.step("cuDevicePrimaryCtxRetain");
  auto pc = cuda::PrimaryContext::retain(side.api, side.device);
  if (!pc) {
    facts.fatal = who + ": " + why_of(pc.error());
    facts.stop_kind = pc.error().kind;
    return std::nullopt;
  }
  side.context = std::move(*pc);
  ctx.step("cuMemAlloc(staging)");
  auto st = cuda::DeviceBuffer::allocate(*side.api, staging_bytes);
  if (!st) {
    facts.fatal = who + ": " + why_of(st.error());
    facts.stop_kind = st.error().kind;
    return std::nullopt;
  }
  side.staging = std::move(*st);
  return side;
}

bool CudaServer::open(std::size_t staging_bytes) {
  ctx_.step("read the selected Vulkan device's deviceUUID");
  auto uuid = selected_vulkan_uuid(ctx_);
  if (!uuid)
    stop_row(facts_, uuid.error().kind, "server: " + why_of(uuid.error()));
  else
    side_ = open_cuda(ctx_, facts_, *uuid, staging_bytes);
  if (!side_) (void)send_setup_failure(ctx_, facts_);
  return side_.has_value();
}

int CudaServer::fail(const Error& error) {
  stop_row(facts_, error.kind, "server: " + why_of(error));
  (void)send_setup_failure(ctx_, facts_);
  return 0;
}

int CudaServer::unsupported(const std::string& why) {
  stop_row(facts_, ErrorKind::unsupported, "server: " + why);
  (void)send_setup_failure(ctx_, facts_);
  return 0;
}

bool CudaServer::require_vmm_posix_fd() {
  const int vmm = side_->attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  const int posix = side_->attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
  if (vmm == 1 && posix == 1) return true;
  (void)unsupported(fmt::format("CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED={} "
                                "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED={}", vmm, posix));
  return false;
}

CUmemAllocationProp posix_fd_allocation_prop(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

Result<std::string> selected_vulkan_uuid(const ChildContext& ctx) {
  // The kept device (drivers.h) instead of a fresh enumeration: a second Vulkan instance per route costs more than the route.
  auto dev = drivers::vulkan_device(ctx.params().device_index, {});
  if (!dev) return std::move(dev).error();
  return (*dev)->device_uuid();
}

void cuda_read_region(ChildContext& ctx, const CudaSide& side, CUdeviceptr base, Region region, Leg& leg) {
  const cuda::Api& api = *side.api;
  const Layout& layout = ctx.layout();
  const std::string step = fmt::format("CUDA GPU read of region {}", region_name(region));
  ctx.step(step);
  leg.attempted = true;
  const CUdeviceptr at = base + layout.offset(region);
  if (ctx.test_fault(step, "corrupt")) {
    // Test-only: one wrong word where the peer wrote, so the compare below must catch it.
    if (CUresult r = api.cuMemsetD32(at + 256, 0xdeadbeefu, 1); r != CUDA_SUCCESS) {
      fail_leg(leg, cuda::cu_error(api, "cuMemsetD32(test fault corrupt)", r));
      return;
    }
  }
  std::vector<std::byte> host(kRegionSize);
  if (auto s = cuda::gpu_read(api, at, *side.staging, host); !s) {
    fail_leg(leg, s.error());
    return;
  }
  auto mismatch = pattern::first_mismatch(std::span<const std::byte>(host), seed_of(region));
  leg.read_ok = !mismatch;
  if (mismatch)
    leg.note += fmt::format("{}region {} differs at +{} (CUDA GPU read)", leg.note.empty() ? "" : " ", region_name(region),
                            *mismatch);
}

bool cuda_write_region(ChildContext& ctx, const CudaSide& side, CUdeviceptr base, Region region, Leg& leg) {
  ctx.step(fmt::format("CUDA GPU write of region {}", region_name(region)));
  std::vector<std::byte> host(kRegionSize);
  pattern::fill(std::span<std::byte>(host), seed_of(region));
  if (auto s = cuda::gpu_write(*side.api, base + ctx.layout().offset(region), *side.staging, host); !s) {
    fail_leg(leg, s.error());
    return false;
  }
  return true;
}

namespace {
namespace EXTMEM_ROUTE_FILE {

// Pinned host memory from cuMemAllocHost, freed with cuMemFreeHost.
class PinnedWords {
 public:
  explicit PinnedWords(const cuda::Api& api) : api_(api) {}
  ~PinnedWords() {
    if (host_ != nullptr) (void)api_.cuMemFreeHost(host_);
  }
  PinnedWords(const PinnedWords&) = delete;
  PinnedWords& operator=(const PinnedWords&) = delete;
  Status allocate(std::size_t words) {
    if (CUresult r = api_.cuMemAllocHost(&host_, words * sizeof(std::uint64_t)); r != CUDA_SUCCESS) {
      host_ = nullptr;
      return cuda::cu_error(api_, fmt::format("whole-allocation sweep: cuMemAllocHost({} bytes)",
                                              words * sizeof(std::uint64_t)), r);
    }
    return {};
  }
  std::uint64_t* data() const { return static_cast<std::uint64_t*>(host_); }

 private:
  const cuda::Api& api_;
  void* host_ = nullptr;
};

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

// Allocations with at least this many stamps (16 MiB and up) move their words with
// the sweep kernels: below it, a module load (a PTX JIT, milliseconds) costs more
// than the per-word copies it saves.
constexpr std::size_t kKernelStamps = 4096;

void cuda_whole(ChildContext& ctx, const CudaSide& side, CUdeviceptr base, std::size_t size, const whole::Far& far,
                Leg& leg, RouteReport& rep, const Handover& handover) {
  if (!(leg.read_ok && leg.write_ok)) return;
  const whole::Plan plan = whole::plan_for(size);
  const std::size_t n = plan.count;
  if (n == 0) return;
  const cuda::Api& api = *side.api;
  constexpr std::size_t kWord = sizeof(std::uint64_t);
  ctx.step(fmt::format("whole-allocation sweep through {}: cuMemAllocHost(pinned words)", leg.name));
  PinnedWords host(api), offsets(api);
  if (auto st = host.allocate(n); !st) {
    fail_leg(leg, st.error());
    leg.write_ok = false;
    return;
  }
  std::uint64_t* words = host.data();
  // The kernels, where they load; otherwise (or for a small plan) one copy per stamp.
  std::unique_ptr<cuda::SweepKernels> kernels;
  if (n >= kKernelStamps) {
    ctx.step(fmt::format("whole-allocation sweep through {}: load the sweep kernels", leg.name));
    auto loaded = cuda::SweepKernels::load(api);
    Status listed = loaded ? offsets.allocate(n) : Status{};
    if (loaded && listed) {
      for (std::size_t i = 0; i < n; ++i) offsets.data()[i] = plan.offset(i);
      kernels = std::move(*loaded);
    } else {
      rep.detail.push_back(fmt::format("{} whole-allocation: one copy per stamp ({})", leg.name,
                                       why_of(loaded ? listed.error() : loaded.error())));
    }
  }
  // Under unified addressing a pinned host pointer is also its device address (cuda.h, cuMemAllocHost).
  auto device_address = [](const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)); };
  CUstream stream = nullptr;  // the default stream; cuCtxSynchronize waits for it
  auto synchronize = [&](const char* what) -> Status {
    if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS)
      return cuda::cu_error(api, fmt::format("whole-allocation sweep: cuCtxSynchronize (after {})", what), r);
    return {};
  };
  GpuWords access;
  access.gather = [&](std::span<std::uint64_t> out) -> Status {
    if (handover.acquire)
      if (auto st = handover.acquire(); !st) return st;
    if (kernels) {
      if (auto st = kernels->gather(device_address(words), base, device_address(offsets.data()), n, stream); !st)
        return st;
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t at = plan.offset(i);
        if (CUresult r = api.cuMemcpyDtoHAsync(words + i, base + at, kWord, stream); r != CUDA_SUCCESS) {
          (void)api.cuCtxSynchronize();  // nothing of ours left in flight before the error returns
          return cuda::cu_error(api, fmt::format("whole-allocation sweep: cuMemcpyDtoHAsync(8 bytes at {})", at), r);
        }
      }
    }
    if (auto st = synchronize("the gather"); !st) return st;
    std::memcpy(out.data(), words, n * kWord);
    return {};
  };
  access.scatter = [&](std::span<const std::uint64_t> in) -> Status {
    std::memcpy(words, in.data(), n * kWord);
    if (kernels) {
      if (auto st = kernels->scatter(base, device_address(words), device_address(offsets.data()), n, stream); !st)
        return st;
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t at = plan.offset(i);
        if (CUresult r = api.cuMemcpyHtoDAsync(base + at, words + i, kWord, stream); r != CUDA_SUCCESS) {
          (void)api.cuCtxSynchronize();
          return cuda::cu_error(api, fmt::format("whole-allocation sweep: cuMemcpyHtoDAsync(8 bytes at {})", at), r);
        }
      }
    }
    if (auto st = synchronize("the scatter"); !st) return st;
    return handover.release ? handover.release() : Status{};
  };
  gpu_sweep([&](const std::string& s) { ctx.step(s); }, "CUDA", plan, access, far, leg, handover.salt);
  if (leg.read_ok && leg.write_ok) rep.detail.push_back(whole_coverage_text(leg.name, size));
}

}  // namespace extmem::probe
