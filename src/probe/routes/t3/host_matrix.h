// Field checks of T3-external-memory-host (docs/probe.md, "T3: the host-pointer
// size matrix and invalid pointers"): host-pointer imports whose size is or is
// not a multiple of minImportedHostPointerAlignment, and imports of a NULL and
// of an unaligned pointer. Both only add detail; they never decide the row.
#pragma once

#include <cstddef>

#include "probe/route_report.h"
#include "probe/worker/child_context.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// Imports memory of an aligned private anonymous mapping as HOST_ALLOCATION
/// (vkGetMemoryHostPointerPropertiesEXT, then vkAllocateMemory with
/// VkImportMemoryHostPointerInfoEXT, then vkFreeMemory) at allocationSize
/// k*align, k*align - 4096 and k*align - 1024 bytes, where align is
/// `alignment` (minImportedHostPointerAlignment, at least a page) and k*align
/// the route's size rounded up. Appends "sizeMatrix: <size>(<form>)=<answer>
/// ..." to rep.detail, each answer "accepted" or "refused=<VkResult>" and,
/// when it disagrees with the spec's valid usage (allocationSize a multiple of
/// the alignment: VK_EXT_external_memory_host, VkImportMemoryHostPointerInfoEXT),
/// "(a finding)". A refusal of a non-multiple is the conformant answer.
void host_size_matrix(ChildContext& ctx, const vk::Device& device, std::size_t alignment, RouteReport& rep);

/// Offers a NULL pointer and a pointer `alignment`/2 bytes into an aligned
/// mapping (so a page is really there) to vkGetMemoryHostPointerPropertiesEXT
/// and to vkAllocateMemory(import HOST_ALLOCATION of `alignment` bytes).
/// Appends "invalidPointer: NULL props=<VkResult> import=<answer>; unaligned
/// ..." to rep.detail, classified "(invalid input)" when refused and "(a
/// finding: accepted invalid input)" when an import succeeded (the memory is
/// freed at once and never touched). Never sets rep.facts: an invalid pointer
/// is the caller's error, not a missing capability. A driver crash here is the
/// worker's death, reported as this row's FAIL naming the step.
void host_invalid_pointers(ChildContext& ctx, const vk::Device& device, std::size_t alignment, RouteReport& rep);

}  // namespace extmem::probe
