// What /proc/meminfo says about memory a new allocation may take.
#pragma once

#include <cstdint>
#include <optional>

namespace extmem::os {

/// MemAvailable of /proc/meminfo, bytes (the kernel's estimate of memory
/// available without swapping, Linux 3.14+); nullopt when the file or the line
/// is missing or unreadable.
std::optional<std::uint64_t> mem_available_bytes();

}  // namespace extmem::os
