// drivers::keep_cuda_warm (worker/drivers.h), beside the other CUDA route code.
#include "probe/worker/drivers.h"

#include "cuda/api.h"
#include "cuda/loader.h"

#include <optional>

#include "extmem/cuda/enumerate.h"

namespace extmem::probe::drivers {

Result<cuda::Enumeration> cuda_enumeration() {
  // One more reference to the library, never dropped: enumerate() closes its own,
  // and an unloaded libcuda would have to run cuInit again.
  static auto* loaded = new std::optional<Result<std::shared_ptr<const cuda::Api>>>();
  if (!*loaded) loaded->emplace(cuda::load());
  return cuda::enumerate();
}

void keep_cuda_warm(const std::string& vulkan_uuid) {
  // Never released, like the kept Vulkan device (drivers.cpp says why).
  static cuda::PrimaryContext* context = nullptr;
  if (context != nullptr) return;
  auto api = cuda::load();
  if (!api) return;
  auto dev = cuda::device_for_vulkan_uuid(**api, vulkan_uuid);
  if (!dev) return;
  auto pc = cuda::PrimaryContext::retain(*api, *dev);
  if (pc) context = pc->release();
}

}  // namespace extmem::probe::drivers
