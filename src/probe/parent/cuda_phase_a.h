// Phase A's CUDA section as text (its JSON: probe/phase_a_codec.h).
#pragma once

#include <iosfwd>
#include <string>

#include "extmem/cuda/enumerate.h"

namespace extmem::probe {

/// Prints the build note, the driver's devices with their route attributes, and
/// which device's UUID matches `vulkan_uuid` (the selected Vulkan device), or why
/// there is no CUDA information (no driver, missing symbol).
void print_cuda(std::ostream& out, const Result<cuda::Enumeration>& e, const std::string& vulkan_uuid);

}  // namespace extmem::probe
