// VK_EXT_external_memory_host import of a mapping, shared by the T3 routes.
#pragma once

#include <optional>

#include "probe/route_report.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// Imports `bytes` bytes at `host` (aligned to minImportedHostPointerAlignment)
/// as buffer memory: vkGetMemoryHostPointerPropertiesEXT, then vkAllocateMemory
/// with VkImportMemoryHostPointerInfoEXT. On failure records the step in `leg`
/// and, when `decides_row` and HOST_ALLOCATION was never advertised importable,
/// sets rep.facts.unsupported (spec: UNSUPPORTED vs FAIL). The mapping must outlive the buffer.
std::optional<vk::Buffer> import_host_pointer(const vk::Device& device, void* host, std::size_t bytes,
                                              std::size_t buffer_size, Leg& leg, RouteReport& rep,
                                              bool decides_row = true);

/// The alignment a host-pointer import needs: minImportedHostPointerAlignment, at least a page.
std::size_t host_import_alignment(const vk::Device& device);

}  // namespace extmem::probe
