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
  if (device.has(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME)) {
#define EXTMEM_LOAD_OPTIONAL(name) f.name = reinterpret_cast<PFN_##name>(gdpa(device.handle(), #name));
    EXTMEM_RECLAIM_VK_TIMELINE_FUNCS(EXTMEM_LOAD_OPTIONAL)
#undef EXTMEM_LOAD_OPTIONAL
  }
  return f;
}

}  // namespace extmem::reclaim::vkr
