#include "probe/routes/vk/export.h"

#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/clock.h"
#include "probe/worker/measure.h"
#include "probe/worker/peer.h"
#include "probe/worker/route_util.h"

namespace extmem::probe {

std::vector<std::string> export_extensions(const HandleKind& h) {
  std::vector<std::string> w = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME, VK_KHR_DEDICATED_ALLOCATION_EXTENSION_NAME};
  if (h.extension != nullptr) w.emplace_back(h.extension);
  return w;
}

std::optional<std::string> missing_extension(const vk::Device& dev, const HandleKind& h) {
  for (const std::string& e : export_extensions(h)) {
    if (e == VK_KHR_DEDICATED_ALLOCATION_EXTENSION_NAME) continue;  // core in Vulkan 1.1
    if (!dev.has(e)) return e + " not exposed by the device";
  }
  return std::nullopt;
}

peer::SetupInfo Exported::info() const {
  peer::SetupInfo i;
  i.allocation_size = buffer.allocation_size;
  i.memory_type_index = buffer.memory_type_index;
  i.dedicated = buffer.dedicated;
  i.fd_size = fd_size;
  i.fd_target = fd_target;
  i.exportable_advertised = exportable_advertised;
  i.device_uuid = device->device_uuid();
  i.measure = measure;
  return i;
}

std::variant<Exported, RouteFacts> export_allocation(ChildContext& ctx, const HandleKind& h) {
  const Layout& layout = ctx.layout();
  RouteFacts facts;
  auto site = [&](const Error& e, bool advertised) {
    SiteFailure s = classify_site(e, advertised, std::string(h.name) + " export");
    stop_row(facts, s.kind(), "server: " + s.why);
    return facts;
  };
  Exported ex;
  auto dev = open_device(ctx, export_extensions(h));
  if (!dev) {
    stop_row(facts, dev.error().kind, "server: " + why_of(dev.error()));
    return facts;
  }
  ex.device = std::move(*dev);
  if (auto missing = missing_extension(*ex.device, h)) {
    facts.unsupported = *missing;
    return facts;
  }
  ctx.step(fmt::format("vkGetPhysicalDeviceExternalBufferProperties({})", h.name));
  ex.exportable_advertised = advertised(*ex.device, h.bit, VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT);

  ctx.step(fmt::format("vkAllocateMemory(export {})", h.name));
  vk::AllocationRequest req;
  req.size = layout.size;
  req.external_handle_types = h.bit;
  req.export_memory = true;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (ctx.params().memory_type >= 0) {
    // --memory-type: this one type, whatever its flags besides HOST_VISIBLE (the parent checked it has that).
    req.allowed_type_bits = 1u << ctx.params().memory_type;
    req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  }
  vk::AllocationFailure af;
  auto buf = ex.device->create_buffer(req, &af);
  if (!buf) {
    if (af.error.kind == ErrorKind::unsupported) {
      facts.unsupported = "server: " + why_of(af.error);
      return facts;
    }
    if (af.at_allocate) return site(af.error, ex.exportable_advertised);
    facts.fatal = "server: " + why_of(af.error);
    facts.stop_kind = af.error.kind;
    return facts;
  }
  ex.buffer = std::move(*buf);
  ctx.step("write region A");
  pattern::fill(layout.region(std::span<std::byte>(ex.buffer.mapped, layout.size), Region::A), seed_of(Region::A));

  ctx.step(fmt::format("vkGetMemoryFdKHR({})", h.name));
  VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  gi.memory = ex.buffer.memory;
  gi.handleType = h.bit;
  int raw_fd = -1;
  VkResult r = ex.device->fn().vkGetMemoryFdKHR(ex.device->handle(), &gi, &raw_fd);
  if (r != VK_SUCCESS) return site(vk::vk_error("vkGetMemoryFdKHR", r), ex.exportable_advertised);
  ex.fd.reset(raw_fd);
  if (ctx.test_fault("post-export fd sanity", "closefd")) ::close(raw_fd);  // test-only: an fd lost after export

  // Post-export sanity: a bad fd should name itself here, not surface later as an import error.
  ctx.step("post-export fd sanity");
  std::string insane;
  if (raw_fd < 0) {
    insane = fmt::format("fd {} < 0", raw_fd);
  } else if (!os::fd_is_open(raw_fd)) {
    insane = "fcntl(F_GETFD) fails: " + errno_code(errno);
    ex.fd.release();  // nothing left to close
  } else if (auto size = os::fd_size(raw_fd); !size) {
    // An opaque fd need not be a file: NVIDIA's is not seekable. No size is not a broken fd.
    if (!size.error().is_errno(ESPIPE)) insane = why_of(size.error());
  } else if (*size < ex.buffer.allocation_size) {
    insane = fmt::format("fd size {} < allocation size {}", *size, ex.buffer.allocation_size);
  } else {
    ex.fd_size = *size;
  }
  ex.fd_target = os::fd_target(raw_fd);
  if (!insane.empty()) {
    facts.fatal = "server: exported fd fails sanity: " + insane;
    return facts;
  }
  if (measure::enabled()) {
    ctx.step(fmt::format("measure export latency ({})", h.name));
    std::vector<double> us;
    for (int i = 0; i < 100 && us.size() < measure::repeats(); ++i) {
      int again = -1;
      const double t0 = os::monotonic_seconds();
      VkResult rr = ex.device->fn().vkGetMemoryFdKHR(ex.device->handle(), &gi, &again);
      const double t1 = os::monotonic_seconds();
      if (rr != VK_SUCCESS) break;
      ::close(again);
      us.push_back((t1 - t0) * 1e6);
    }
    measure::route_latency(&RouteFigures::export_us, us);
    ex.measure = measure::collected();
  }
  return ex;
}

int export_and_serve(ChildContext& ctx, const HandleKind& h, const std::function<ServeSync(Exported&)>& sync_for) {
  auto result = export_allocation(ctx, h);
  if (auto* facts = std::get_if<RouteFacts>(&result)) {
    (void)send_setup_failure(ctx, *facts);
    return 0;
  }
  Exported& ex = std::get<Exported>(result);
  ctx.step("send the fd");
  if (!send_setup(ctx, ex.info(), ex.fd.get())) return 1;
  ex.fd.reset();  // the peer holds its own copy now
  const ServeSync sync = sync_for ? sync_for(ex) : ServeSync{};
  ctx.step("serve the peer's checks");
  return serve(ctx, std::span<std::byte>(ex.buffer.mapped, ctx.layout().size), sync) ? 0 : 1;
}

}  // namespace extmem::probe
