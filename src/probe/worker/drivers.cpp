#include "probe/worker/drivers.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include <vulkan/vulkan.h>

#include "extmem/probe/probe.h"
#include "gles/egl_context.h"

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

struct GlRequest {
  std::string requested{to_string(kDefaultGlDriver)};
  std::uint32_t device_index = 0;
  std::optional<GlDriverChoice> chosen;
  bool applied = false;
};

GlRequest& gl_request() {
  static auto* r = new GlRequest();
  return *r;
}

// The selected device as `auto` needs it, from the kept instance: properties only.
std::optional<VulkanDriverFacts> device_facts(std::uint32_t index) {
  auto inst = vulkan_instance();
  if (!inst) return std::nullopt;
  auto pds = (*inst)->physical_devices();
  if (!pds || index >= pds->size()) return std::nullopt;
  VkPhysicalDeviceProperties base{};
  (*inst)->fn().vkGetPhysicalDeviceProperties((*pds)[index], &base);
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  if (base.apiVersion >= VK_API_VERSION_1_2) p2.pNext = &drv;  // the struct is core from 1.2 (lavapipe: 1.3)
  (*inst)->fn().vkGetPhysicalDeviceProperties2((*pds)[index], &p2);
  return VulkanDriverFacts{p2.properties.vendorID, p2.properties.deviceName, drv.driverName};
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
      VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME,
      // --measure of the S1 rows: GPU timestamps of two processes on one host clock.
      VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME};
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

void set_gl_request(std::string requested, std::uint32_t device_index) {
  GlRequest& r = gl_request();
  r.requested = std::move(requested);
  r.device_index = device_index;
}

const GlDriverChoice& decide_gl_driver() {
  GlRequest& r = gl_request();
  if (!r.chosen) {
    const char* user = std::getenv("MESA_LOADER_DRIVER_OVERRIDE");
    std::optional<VulkanDriverFacts> facts;
    if (r.requested == "auto" && user == nullptr) facts = device_facts(r.device_index);
    r.chosen = choose_gl_driver(r.requested, facts, user, mesa_egl_vendor_file());
  }
  return *r.chosen;
}

const GlDriverChoice& gl_driver() {
  GlRequest& r = gl_request();
  (void)decide_gl_driver();
  if (!r.applied) {
    apply_gl_driver(*r.chosen);
    r.applied = true;
  }
  return *r.chosen;
}

Result<std::shared_ptr<gles::EglContext>> egl_context() {
  Kept<gles::EglContext>& k = kept_egl();
  if (!k) {
    (void)gl_driver();
    auto created = gles::EglContext::create();
    if (created)
      k.emplace(std::shared_ptr<gles::EglContext>(std::move(*created)));
    else
      k.emplace(std::move(created).error());
  }
  if (*k) (void)(**k)->take_error();
  return *k;
}

std::atomic<long>& live_gl_buffers() {
  static std::atomic<long> count{0};
  return count;
}

LiveObjects live_objects() {
  LiveObjects l;
  vk::LiveObjects v = vk::live_objects();
  l.vk_buffers = v.buffers;
  l.vk_memories = v.memories;
  l.gl_buffers = live_gl_buffers().load();
  return l;
}

}  // namespace extmem::probe::drivers
