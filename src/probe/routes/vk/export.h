// The exporting half of the T1 routes: a HOST_VISIBLE | HOST_COHERENT Vulkan
// allocation exported as an fd (docs/probe.md, "T1").
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "extmem/core/verdict.h"
#include "extmem/os/fd.h"
#include "extmem/probe/measure_figures.h"
#include "probe/worker/child_context.h"
#include "probe/worker/peer.h"
#include "probe/routes.h"
#include "vulkan/context.h"

namespace extmem::probe {

struct HandleKind {
  VkExternalMemoryHandleTypeFlagBits bit;
  const char* name;        ///< "OPAQUE_FD"
  const char* extension;   ///< device extension needed besides VK_KHR_external_memory_fd, or null
};

inline constexpr HandleKind kOpaqueFd{VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, "OPAQUE_FD", nullptr};
inline constexpr HandleKind kDmaBuf{VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT, "DMA_BUF",
                                    VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME};

/// Test-only (EXTMEM_TEST_FAULT): the exporter closes the exported fd before its sanity check.
inline constexpr FaultDef kCloseFdFault{"closefd", Role::server, "post-export fd sanity",
                                        "the exported fd is closed before its check: the row must FAIL at the "
                                        "sanity check, fcntl(F_GETFD) -> EBADF"};

/// Extensions to enable for handle kind `h`.
std::vector<std::string> export_extensions(const HandleKind& h);
/// "<ext> not exposed by the device" when a required extension is missing.
std::optional<std::string> missing_extension(const vk::Device& device, const HandleKind& h);

/// A live export: the device, the mapped buffer (region A written) and the fd (owned here).
struct Exported {
  std::shared_ptr<vk::Device> device;
  vk::Buffer buffer;
  os::UniqueFd fd;
  std::size_t fd_size = 0;  ///< bytes, fstat/lseek of the exported fd; 0 when it has no size (ESPIPE)
  std::string fd_target;    ///< readlink of the fd: what the driver handed out
  bool exportable_advertised = false;
  std::optional<Measurement> measure;  ///< --measure: what this side measured (export latency), for the peer's report

  /// The setup's info: the allocation an importer must match, the fd's size
  /// and target, plus this side's figures when it measured.
  peer::SetupInfo info() const;
};

/// Opens the device, allocates with VkExportMemoryAllocateInfo (dedicated when
/// required or preferred), writes region A, exports with vkGetMemoryFdKHR and
/// checks the fd (>= 0, F_GETFD, size >= allocation where the fd has a size). On failure returns the
/// row's facts (UNSUPPORTED when the handle type was never advertised, else FAIL).
std::variant<Exported, RouteFacts> export_allocation(ChildContext& ctx, const HandleKind& h);

/// The whole passive exporter: export_allocation, send the fd, serve the peer.
/// `sync_for`, when set, gives the ServeSync for the export (a route's own
/// requests: T1-opaque-fd-cuda's handover, cuda/vk_handover.h); it lives while serving.
int export_and_serve(ChildContext& ctx, const HandleKind& h,
                     const std::function<ServeSync(Exported&)>& sync_for = {});

}  // namespace extmem::probe
