// The re-export leg of T1-opaque-fd (docs/probe.md, "Re-export of imported
// memory"): memory imported from an opaque fd, exported again with
// vkGetMemoryFdKHR, and the re-exported fd imported a third time. A driver can
// hand out an fd that names a copy, or a different object, and every earlier
// step still succeeds; only bytes seen both ways through the third mapping show
// that the re-export names the same memory.
#pragma once

#include <cstdint>
#include <span>

#include "extmem/core/verdict.h"
#include "probe/route_report.h"
#include "probe/worker/child_context.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// What the exporter announced about the allocation behind the received fd.
struct ReexportSource {
  int fd = -1;                       ///< the received opaque fd (not consumed: each import takes a dup)
  std::uint64_t allocation_size = 0; ///< bytes, as announced by the exporter
  std::uint32_t memory_type_index = 0; ///< the exporter's type (an opaque-fd import must use it)
  bool dedicated = false;            ///< the exporter's allocation was dedicated
};

/// Fills leg `leg` ("reexport"): imports a dup of `src.fd` with
/// VkExportMemoryAllocateInfo(OPAQUE_FD) chained beside the import, calls
/// vkGetMemoryFdKHR(OPAQUE_FD) on that imported memory, imports the new fd
/// (a dup) and maps it: the third mapping. The exporter then writes region F,
/// which the third mapping must show (read_ok); region D is written through
/// it and the exporter must see it (write_ok), and `first_import` (the route's
/// first imported mapping, may be empty) must show it too. The leg is
/// informational (the route table's [i]); whether the driver promised
/// re-export (OPAQUE_FD in exportFromImportedHandleTypes,
/// vkGetPhysicalDeviceExternalBufferProperties) is printed beside it. With
/// --measure, the third mapping gets CPU figures. Each failure keeps the step and the
/// VkResult; detail gets "reexport: ..." (fd-consumed of both imports).
/// `device` must have VK_KHR_external_memory_fd enabled.
void reexport_leg(ChildContext& ctx, const vk::Device& device, const ReexportSource& src,
                  std::span<const std::byte> first_import, Leg& leg, RouteReport& rep);

}  // namespace extmem::probe
