// Fuzzes --device=SPEC resolution against a fixed device list: any answer must be a valid index.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "extmem/vulkan/enumerate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<extmem::vk::DeviceInfo> devices = [] {
    std::vector<extmem::vk::DeviceInfo> d(2);
    d[0].index = 0;
    d[0].name = "llvmpipe (LLVM 15.0.6, 256 bits)";
    d[0].device_type = "CPU";
    d[0].device_uuid = "6d65736132322e332e36000000000000";
    d[1].index = 1;
    d[1].name = "NVIDIA H200";
    d[1].device_type = "DISCRETE_GPU";
    d[1].device_uuid = "d55d1438023ad127abb977c3f4eddbe9";
    return d;
  }();
  auto index = extmem::vk::select_device(devices, std::string(reinterpret_cast<const char*>(data), size));
  if (index && *index >= devices.size()) __builtin_trap();
  return 0;
}
