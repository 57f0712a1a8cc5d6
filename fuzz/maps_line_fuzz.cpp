// Fuzzes the /proc/PID/maps line parser: accepted lines must be self-consistent.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/os/proc_maps.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto e = extmem::os::parse_maps_line(std::string_view(reinterpret_cast<const char*>(data), size));
  if (e && (e->end < e->start || e->perms.size() != 4)) __builtin_trap();
  return 0;
}
