#include "vulkan/compute_fns.h"

namespace extmem::vk {

Result<ComputeFns> load_compute_fns(const Device& device) {
  ComputeFns f;
  PFN_vkGetDeviceProcAddr gdpa = device.instance().fn().vkGetDeviceProcAddr;
#define EXTMEM_LOAD(name)                                                              \
  f.name = reinterpret_cast<PFN_##name>(gdpa(device.handle(), #name));                 \
  if (f.name == nullptr) return Error{"vkGetDeviceProcAddr(" #name ")", ErrorKind::unsupported, "null", {}};
  EXTMEM_VK_COMPUTE_FUNCS(EXTMEM_LOAD)
#undef EXTMEM_LOAD
  return f;
}

}  // namespace extmem::vk
