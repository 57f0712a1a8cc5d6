// VK_EXT_external_memory_host import of a mapping, shared by the T3 routes.
#pragma once

#include <optional>

#include "probe/worker/child_context.h"
#include "probe/route_report.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// Imports `bytes` bytes at `host` (aligned to minImportedHostPointerAlignment)
/// as buffer memory: vkGetMemoryHostPointerPropertiesEXT, then vkAllocateMemory
/// with VkImportMemoryHostPointerInfoEXT. On failure records the step in `leg`
/// and, when `decides_row` and HOST_ALLOCATION was never advertised importable,
/// sets rep.facts.unsupported (docs/probe.md, "UNSUPPORTED or FAIL"). The mapping must outlive the buffer.
std::optional<vk::Buffer> import_host_pointer(const vk::Device& device, void* host, std::size_t bytes,
                                              std::size_t buffer_size, Leg& leg, RouteReport& rep,
                                              bool decides_row = true);

/// Opens the device with VK_EXT_external_memory_host for a T3 route. On
/// failure sets rep.facts (UNSUPPORTED when the extension or device is absent,
/// else FAIL) and returns null; on success notes minImportedHostPointerAlignment.
std::shared_ptr<vk::Device> open_host_import_device(ChildContext& ctx, RouteReport& rep);

/// The alignment a host-pointer import needs: minImportedHostPointerAlignment, at least a page.
std::size_t host_import_alignment(const vk::Device& device);

}  // namespace extmem::probe
