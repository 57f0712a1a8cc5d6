#include "reclaim/vk_fns.h"

namespace extmem::reclaim::vkr {

Result<Fns> load_fns(const vk::Device& device) {
  Fns f;
  f.base = &device.fn();
  PFN_vkGetDeviceProcAddr gdpa = device.instance().fn().vkGetDeviceProcAddr;
#define EXTMEM_LOAD(name)                                                                        \
  f.name = reinterpret_cast<PFN_##name>(gdpa(device.handle(), #name));                           \
  if (f.name == nullptr) return Error{"vkGetDeviceProcAddr(" #name ")", ErrorKind::unsupported, "null", {}};
  EXTMEM_RECLAIM_VK_FUNCS(EXTMEM_LOAD)
#undef EXTMEM_LOAD
  return f;
}

}  // namespace extmem::reclaim::vkr
