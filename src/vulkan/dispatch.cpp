#include "vulkan/dispatch.h"

#include <dlfcn.h>

#include <cstdio>

#include "extmem/os/library.h"

namespace extmem::vk {

LoaderLibrary::~LoaderLibrary() { os::close_library(handle); }

Result<std::shared_ptr<LoaderLibrary>> open_loader() {
  auto lib = std::make_shared<LoaderLibrary>();
  lib->handle = ::dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) lib->handle = ::dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) {
    const char* why = ::dlerror();
    return Error{"dlopen(libvulkan.so.1)", ErrorKind::unsupported, why != nullptr ? why : "not found",
                 "the Vulkan loader is not installed (Debian: libvulkan1)"};
  }
  lib->get_instance_proc_addr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(lib->handle, "vkGetInstanceProcAddr"));
  if (lib->get_instance_proc_addr == nullptr)
    return Error{"dlsym(vkGetInstanceProcAddr)", ErrorKind::unsupported, "missing", "not a Vulkan loader"};
  lib->create_instance =
      reinterpret_cast<PFN_vkCreateInstance>(lib->get_instance_proc_addr(nullptr, "vkCreateInstance"));
  lib->enumerate_instance_version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      lib->get_instance_proc_addr(nullptr, "vkEnumerateInstanceVersion"));
  if (lib->create_instance == nullptr)
    return Error{"vkGetInstanceProcAddr(vkCreateInstance)", ErrorKind::unsupported, "null", {}};
  return lib;
}

const char* result_name(VkResult r) {
  switch (r) {
#define EXTMEM_CASE(x) \
  case x: return #x;
    EXTMEM_CASE(VK_SUCCESS)
    EXTMEM_CASE(VK_NOT_READY)
    EXTMEM_CASE(VK_TIMEOUT)
    EXTMEM_CASE(VK_EVENT_SET)
    EXTMEM_CASE(VK_EVENT_RESET)
    EXTMEM_CASE(VK_INCOMPLETE)
    EXTMEM_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    EXTMEM_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    EXTMEM_CASE(VK_ERROR_INITIALIZATION_FAILED)
    EXTMEM_CASE(VK_ERROR_DEVICE_LOST)
    EXTMEM_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    EXTMEM_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    EXTMEM_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    EXTMEM_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    EXTMEM_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    EXTMEM_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    EXTMEM_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    EXTMEM_CASE(VK_ERROR_FRAGMENTED_POOL)
    EXTMEM_CASE(VK_ERROR_UNKNOWN)
    EXTMEM_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    EXTMEM_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    EXTMEM_CASE(VK_ERROR_FRAGMENTATION)
    EXTMEM_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    EXTMEM_CASE(VK_PIPELINE_COMPILE_REQUIRED)
    EXTMEM_CASE(VK_ERROR_SURFACE_LOST_KHR)
    EXTMEM_CASE(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    EXTMEM_CASE(VK_SUBOPTIMAL_KHR)
    EXTMEM_CASE(VK_ERROR_OUT_OF_DATE_KHR)
    EXTMEM_CASE(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    EXTMEM_CASE(VK_ERROR_VALIDATION_FAILED_EXT)
    EXTMEM_CASE(VK_ERROR_INVALID_SHADER_NV)
    EXTMEM_CASE(VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT)
    EXTMEM_CASE(VK_ERROR_NOT_PERMITTED_KHR)
    EXTMEM_CASE(VK_ERROR_FULL_SCREEN_EXCLUSIVE_MODE_LOST_EXT)
    EXTMEM_CASE(VK_THREAD_IDLE_KHR)
    EXTMEM_CASE(VK_THREAD_DONE_KHR)
    EXTMEM_CASE(VK_OPERATION_DEFERRED_KHR)
    EXTMEM_CASE(VK_OPERATION_NOT_DEFERRED_KHR)
    EXTMEM_CASE(VK_ERROR_COMPRESSION_EXHAUSTED_EXT)
#undef EXTMEM_CASE
    default: break;
  }
  static thread_local char buf[32];
  std::snprintf(buf, sizeof buf, "VkResult(%d)", static_cast<int>(r));
  return buf;
}

Error vk_error(std::string step, VkResult r, std::string detail) {
  return coded_error(std::move(step), ErrorKind::driver, CodeSpace::vk_result, r, result_name(r), std::move(detail));
}

}  // namespace extmem::vk
