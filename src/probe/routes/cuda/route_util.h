// What the CUDA rows share (issue #4): loading the driver into a route child,
// and GPU reads/writes of a region through a device-local staging buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cuda/api.h"
#include "extmem/core/verdict.h"
#include "probe/worker/child_context.h"
#include "probe/worker/whole_alloc.h"
#include "probe/routes.h"

namespace extmem::probe {

/// A route child's CUDA side: the driver table, the device that matches the
/// selected Vulkan device, its current primary context, and a staging buffer.
struct CudaSide {
  std::shared_ptr<const cuda::Api> api;
  CUdevice device = 0;
  std::string vulkan_uuid;  ///< the deviceUUID (hex) the device was matched by
  std::unique_ptr<cuda::PrimaryContext> context;
  std::unique_ptr<cuda::DeviceBuffer> staging;
  int attribute(CUdevice_attribute a) const;  ///< cuDeviceGetAttribute, -1 when the query fails
};

/// Loads the driver, picks the CUDA device whose UUID equals `vulkan_uuid`,
/// retains its primary context and allocates `staging_bytes` of staging memory
/// (steps reported). On failure sets `facts` and returns nullopt: skip "no CUDA
/// driver (...)" when libcuda cannot be opened or cuInit says no CUDA is usable
/// here (cuda::cuinit_error: stub library, no device, ...); unsupported when it lacks an
/// entry point (named) or no CUDA device matches; fatal for a failing CUDA call.
std::optional<CudaSide> open_cuda(ChildContext& ctx, RouteFacts& facts, const std::string& vulkan_uuid,
                                  std::size_t staging_bytes);

/// The start and the giving up every allocating half on CUDA shares
/// (T1-cuda-ipc, T1-cuda-vmm-fd, T1-cuda-vmm-multichunk): until its setup is
/// sent, a server that gives up sends its facts as the setup's answer, so the
/// importing half reports them.
///   CudaServer server(ctx);
///   if (!server.open(bytes)) return 0;
///   ... return server.fail(why_of(e)); ...
class CudaServer {
 public:
  explicit CudaServer(ChildContext& ctx) : ctx_(ctx) {}

  /// The selected Vulkan device's deviceUUID (selected_vulkan_uuid), then
  /// open_cuda on it with `staging_bytes`. False when either failed: facts
  /// ("server: <step> -> <code>" with the error's kind for the UUID, open_cuda's
  /// otherwise) have been sent as the setup failure, and the half ends with exit code 0.
  bool open(std::size_t staging_bytes);
  /// Gives up on `error`: stop_row(facts, error.kind, "server: <step> -> <code> (<detail>)"),
  /// sent as the setup failure. Returns 0, the half's exit code.
  int fail(const Error& error);
  /// Gives up: the facts say unsupported "server: <why>" (kind unsupported), sent. Returns 0.
  int unsupported(const std::string& why);
  /// Whether the device offers the virtual memory management API with POSIX-fd
  /// export (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED and
  /// CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED both 1);
  /// when not, unsupported() naming both values has been sent.
  bool require_vmm_posix_fd();

  /// The side open() opened; only after it returned true.
  CudaSide& side() { return *side_; }
  const cuda::Api& api() const { return *side_->api; }

 private:
  ChildContext& ctx_;
  RouteFacts facts_;
  std::optional<CudaSide> side_;
};

/// cuMemCreate's properties for pinned memory on `device` exportable as a POSIX
/// fd (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; CUDA driver API, "Virtual
/// Memory Management").
CUmemAllocationProp posix_fd_allocation_prop(CUdevice device);

/// deviceUUID (hex) of the Vulkan device the run selected. Errors: drivers::vulkan_device()'s.
/// invalid_argument when the index is out of range.
Result<std::string> selected_vulkan_uuid(const ChildContext& ctx);

/// GPU read of `region` at `base` (device address of the shared allocation's
/// offset 0) and compare with the region's pattern: sets leg.attempted and
/// leg.read_ok, notes "region X differs at +N" on a mismatch, fail_leg on a
/// CUDA error. Test-only: EXTMEM_TEST_FAULT=ROW:ROLE:CUDA GPU read:corrupt
/// makes the reader first overwrite one 32-bit word at +256 of the region (a
/// cuMemsetD32 into the shared memory), standing in for a peer whose write
/// went wrong; the compare must then fail at +256.
void cuda_read_region(ChildContext& ctx, const CudaSide& side, CUdeviceptr base, Region region, Leg& leg);
/// cuda_read_region's test-only fault, for a route whose reading half is `role`.
constexpr FaultDef corrupt_fault(Role role) {
  return {"corrupt", role, "CUDA GPU read", "a reader overwrites one 32-bit word at +256 of the peer-written region before its GPU read: the row "
    "must report the region differing at +256"};
}

/// GPU write of `region`'s pattern to `base` + its offset (gpu_write). False,
/// with the error in `leg`, on a CUDA error.
bool cuda_write_region(ChildContext& ctx, const CudaSide& side, CUdeviceptr base, Region region, Leg& leg);

/// Ordering around this GPU's accesses to the shared memory, for a leg that
/// hands over as the APIs specify (T1-opaque-fd-cuda's cudasync): `acquire`
/// before every GPU read (the other side's writes become visible to CUDA),
/// `release` after every GPU write (the other side may then read). Empty: none.
struct Handover {
  std::function<Status()> acquire;
  std::function<Status()> release;
  std::uint64_t salt = 0;  ///< gpu_sweep's: a second sweep of the same memory uses other stamps
};

/// The whole-allocation sweep through CUDA (docs/probe.md, "The whole
/// allocation") for a leg that round-tripped its regions: gpu_sweep with CUDA
/// copies of one 8-byte word per stamped page, between the shared memory at
/// `base` (device address of the allocation's offset 0; at least `size` bytes
/// mapped there) and a pinned host buffer (cuMemAllocHost): a gather is one
/// cuMemcpyDtoHAsync per stamp on the default stream, a scatter one
/// cuMemcpyHtoDAsync per stamp, each followed by cuCtxSynchronize. Every
/// CUresult is checked; the first failing one is the leg's failing step and
/// code. `far` is the other side's view (the peer, peer_far()). When the leg
/// still round-trips afterwards, `rep` gets whole_coverage_text. With `handover`,
/// every gather starts with its acquire and every scatter ends with its release.
void cuda_whole(ChildContext& ctx, const CudaSide& side, CUdeviceptr base, std::size_t size, const whole::Far& far,
                Leg& leg, RouteReport& rep, const Handover& handover = {});

}  // namespace extmem::probe
