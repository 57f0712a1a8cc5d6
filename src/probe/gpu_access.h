// The GPU access every tier row takes (spec/probe.md, "GPU access"): copy a
// region out of the shared buffer into a private one, write region E by a GPU
// transfer, wait, and make the writes visible to the host.
#pragma once

#include <optional>

#include "extmem/core/verdict.h"
#include "probe/layout.h"
#include "vulkan/context.h"

namespace extmem::probe {

/// Runs the GPU access on `shared` (a buffer over the shared memory, at least
/// layout.size bytes). Sets gpu.attempted; gpu.read_ok when the copy-out of
/// `read_region` matches that region's pattern (on a mismatch gpu.note gets
/// "gpuMismatchAt="). The write (region E) is only verified by the other
/// process, which sets gpu.write_ok. On a Vulkan failure gpu.failed_step/code are set.
void gpu_access(const vk::Device& device, VkBuffer shared, const Layout& layout, Region read_region, Leg& gpu);

}  // namespace extmem::probe
