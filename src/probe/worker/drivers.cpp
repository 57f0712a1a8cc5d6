#include "probe/worker/drivers.h"

#include <algorithm>
#include <map>
#include <optional>

#include <vulkan/vulkan.h>

#include "probe/routes/gles_import.h"

namespace extmem::probe::drivers {
namespace {

// Kept results: a value or the error of the one attempt.
template <typename T>
using Kept = std::optional<Result<std::shared_ptr<T>>>;

// Never destroyed: tearing a driver down from a static destructor at exit runs after
// the driver's own exit handlers, and NVIDIA's then crashes (SIGSEGV at exit of every
// fresh child, measured on the H200 with driver 580.159.04). The kernel reclaims it all.
Kept<vk::Instance>& kept_instance() {
  static auto* k = new Kept<vk::Instance>();
  return *k;
}

std::map<std::uint32_t, Result<std::shared_ptr<vk::Device>>>& kept_devices() {
  static auto* k = new std::map<std::uint32_t, Result<std::shared_ptr<vk::Device>>>();
  return *k;
}

Kept<gles::EglContext>& kept_egl() {
  static auto* k = new Kept<gles::EglContext>();
  return *k;
}

Result<std::shared_ptr<vk::Device>> open(std::uint32_t index, const std::vector<std::string>& extensions) {
  auto inst = vulkan_instance();
  if (!inst) return std::move(inst).error();
  auto dev = vk::Device::create(*inst, index, extensions);
  if (!dev) return std::move(dev).error();
  return std::shared_ptr<vk::Device>(std::move(*dev));
}

}  // namespace

Result<std::shared_ptr<vk::Instance>> vulkan_instance() {
  Kept<vk::Instance>& k = kept_instance();
  if (!k) k.emplace(vk::Instance::create());
  return *k;
}

const std::vector<std::string>& route_device_extensions() {
  static const std::vector<std::string> list = {
      VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, VK_KHR_DEDICATED_ALLOCATION_EXTENSION_NAME,
      VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME,
      // The S1 rows: semaphore fds, and timeline semaphores (vk::Device::create enables the feature).
      VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME};
  return list;
}

Result<std::shared_ptr<vk::Device>> vulkan_device(std::uint32_t index, const std::vector<std::string>& wanted) {
  const auto& known = route_device_extensions();
  for (const std::string& w : wanted)
    if (std::find(known.begin(), known.end(), w) == known.end()) return open(index, wanted);
  auto& devices = kept_devices();
  auto it = devices.find(index);
  if (it == devices.end()) it = devices.emplace(index, open(index, known)).first;
  return it->second;
}

Result<std::shared_ptr<gles::EglContext>> egl_context() {
  Kept<gles::EglContext>& k = kept_egl();
  if (!k) {
    auto created = gles::EglContext::create();
    if (created)
      k.emplace(std::shared_ptr<gles::EglContext>(std::move(*created)));
    else
      k.emplace(std::move(created).error());
  }
  if (*k) (void)(**k)->take_error();
  return *k;
}

LiveObjects live_objects() {
  LiveObjects l;
  vk::LiveObjects v = vk::live_objects();
  l.vk_buffers = v.buffers;
  l.vk_memories = v.memories;
  l.gl_buffers = GlSharedBuffer::live();
  return l;
}

}  // namespace extmem::probe::drivers
