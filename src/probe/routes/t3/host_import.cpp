#include "probe/routes/t3/host_import.h"

#include <unistd.h>

#include <fmt/format.h>

#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {

std::shared_ptr<vk::Device> open_host_import_device(ChildContext& ctx, RouteReport& rep) {
  auto dev = open_device(ctx, {VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME});
  if (!dev) {
    stop_row(rep.facts, dev.error().kind, "server: " + why_of(dev.error()));
    return nullptr;
  }
  if (!(*dev)->has(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) {
    rep.facts.unsupported = "VK_EXT_external_memory_host not exposed by the device";
    return nullptr;
  }
  rep.detail.push_back(fmt::format("minImportedHostPointerAlignment={}", (*dev)->min_imported_host_pointer_alignment()));
  return std::move(*dev);
}

std::size_t host_import_alignment(const vk::Device& device) {
  auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return std::max<std::size_t>(page, device.min_imported_host_pointer_alignment());
}

std::optional<vk::Buffer> import_host_pointer(const vk::Device& device, void* host, std::size_t bytes,
                                              std::size_t buffer_size, Leg& leg, RouteReport& rep,
                                              bool decides_row) {
  leg.attempted = true;
  const auto type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  bool importable = advertised(device, type, VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT);
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  VkResult r = device.fn().vkGetMemoryHostPointerPropertiesEXT(device.handle(), type, host, &props);
  auto declined = [&](const Error& e) {
    fail_leg(leg, e);
    SiteFailure s = classify_site(e, importable, "HOST_ALLOCATION import");
    if (s.unsupported && decides_row) rep.facts.unsupported = s.why;
    return std::nullopt;
  };
  if (r != VK_SUCCESS) return declined(vk::vk_error("vkGetMemoryHostPointerPropertiesEXT", r));
  if (decides_row) rep.detail.push_back(fmt::format("hostPointerTypeBits=0x{:x}", props.memoryTypeBits));

  vk::AllocationRequest req;
  req.size = buffer_size;
  req.external_handle_types = type;
  req.import_host_pointer = host;
  req.allocation_size = bytes;
  req.allowed_type_bits = props.memoryTypeBits;
  req.dedicated = 0;  // host-pointer imports cannot be dedicated allocations
  req.map = false;    // the host mapping is the memory; the GPU access is what tests the import
  vk::AllocationFailure af;
  auto buf = device.create_buffer(req, &af);
  if (!buf) {
    if (af.at_allocate || af.error.kind == ErrorKind::unsupported) return declined(af.error);
    fail_leg(leg, af.error);
    return std::nullopt;
  }
  if (decides_row) rep.detail.push_back(fmt::format("hostImport memoryType={} bytes={}", buf->memory_type_index, bytes));
  if (LegFigures* m = measure::leg(leg.name)) m->gpu_shared_memory = "host";  // a host pointer's pages are host memory
  measure::import_leg(leg.name, device, req);
  return std::move(*buf);
}

}  // namespace extmem::probe
