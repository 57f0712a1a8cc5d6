#include "extmem/os/meminfo.h"

#include <fstream>
#include <string>

namespace extmem::os {

std::optional<std::uint64_t> mem_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(256, '\n');
  }
  return std::nullopt;
}

}  // namespace extmem::os
