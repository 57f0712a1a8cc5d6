// The Vulkan exporter's half of a handover with the ordering the APIs define
// (docs/probe.md, "T1-opaque-fd-cuda"): memory exported to another API is only
// defined for it after a semaphore that API waits on was signalled after the
// writes, and for this process's host only after a wait on the other API's
// signal. One timeline semaphore, exported as OPAQUE_FD, carries both
// directions; the importer picks increasing values.
//   signal v   after this process's CPU writes: a queue submission that releases
//              the buffer to VK_QUEUE_FAMILY_EXTERNAL (host writes made
//              available) and signals v
//   wait v     before this process's CPU reads: a submission that waits for v,
//              acquires the buffer from VK_QUEUE_FAMILY_EXTERNAL and makes it
//              visible to the host; its fence is waited for, bounded
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/vk/sync.h"
#include "probe/worker/child_context.h"
#include "probe/worker/peer.h"

namespace extmem::probe {

class VkHandover {
 public:
  /// For `buffer` (the exported allocation, bound at offset 0) on `device`.
  /// Errors: unsupported when the device lacks VK_KHR_external_semaphore_fd or
  /// timeline semaphores, or does not offer exportable OPAQUE_FD timelines
  /// (the text names what vkGetPhysicalDeviceExternalSemaphoreProperties said);
  /// SyncDevice::create's and create_semaphore's errors otherwise.
  static Result<std::unique_ptr<VkHandover>> create(std::shared_ptr<vk::Device> device, VkBuffer buffer);
  ~VkHandover();
  VkHandover(const VkHandover&) = delete;
  VkHandover& operator=(const VkHandover&) = delete;

  /// A new OPAQUE_FD of the timeline (vkGetSemaphoreFdKHR), owned by the caller.
  Result<os::UniqueFd> export_fd();
  /// Release + signal `value`, after the caller's CPU writes; returns once submitted and
  /// complete (nothing in it waits). Errors: the failing call's VkResult; timeout after 5 s.
  Status signal(std::uint64_t value);
  /// Wait for `value` + acquire, before the caller's CPU reads; at most `bound`.
  /// Errors: the failing call's VkResult; kind timeout ("VK_TIMEOUT") when the
  /// value was not signalled within `bound` (the submission then stays pending
  /// and the destructor leaks what it uses rather than destroy it under the GPU).
  Status wait(std::uint64_t value, std::chrono::milliseconds bound);

 private:
  VkHandover() = default;
  Status submit_and_wait(const vksync::Submit& s, const char* what, std::chrono::milliseconds bound);
  std::unique_ptr<vksync::SyncDevice> sd_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  vksync::Semaphore sem_;
  bool pending_ = false;  // a submission did not complete: leak, do not destroy
};

/// The requests a serving exporter answers for a VkHandover (ServeSync::extra;
/// cuda/handover_codec.h): Export (the reply's frame carries the semaphore's fd),
/// Signal and Wait. The handover is made on the first request with `make`. A
/// request the codec refuses, or a failure, is answered with an s1::Refusal
/// (unsupported when the error's kind is), not an end of serving. Returns
/// nullopt for any other op.
std::optional<Result<nlohmann::json>> handover_op(ChildContext& ctx, std::unique_ptr<VkHandover>& h,
                                                  const std::function<Result<std::unique_ptr<VkHandover>>()>& make,
                                                  const std::string& op, const nlohmann::json& req, os::UniqueFd& fd_out);

/// export_and_serve (vk/export.h) that also answers the handover requests:
/// T1-opaque-fd-cuda's exporter.
int export_and_serve_with_handover(ChildContext& ctx, const HandleKind& h);

}  // namespace extmem::probe
