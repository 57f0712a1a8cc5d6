#include "probe/routes/t1/reexport.h"

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/fd.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "vulkan/dispatch.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr auto kOpaque = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;

// One opaque-fd import of a dup of `fd` into the exporter's type; `exportable` chains
// VkExportMemoryAllocateInfo so the imported memory may be exported again (Vulkan spec,
// vkGetMemoryFdKHR valid usage: the handle type must have been in that struct).
Result<vk::Buffer> import_once(const vk::Device& device, const ReexportSource& src, int fd, bool exportable,
                               std::size_t size, std::string& ownership) {
  auto dup = ImportDup::of(fd);
  if (!dup) return std::move(dup).error();
  vk::AllocationRequest req;
  req.size = size;
  req.external_handle_types = kOpaque;
  req.export_memory = exportable;
  req.import_fd = dup->number();
  req.import_fd_type = kOpaque;
  req.allocation_size = src.allocation_size;
  req.memory_type_index = static_cast<int>(src.memory_type_index);
  req.dedicated = src.dedicated ? 1 : 0;
  vk::AllocationFailure af;
  auto buf = device.create_buffer(req, &af);
  ownership = dup->settle(buf || af.memory_allocated);
  if (!buf) return af.error;
  return buf;
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void reexport_leg(ChildContext& ctx, const vk::Device& device, const ReexportSource& src,
                  std::span<const std::byte> first_import, Leg& leg, RouteReport& rep) {
  const Layout& layout = ctx.layout();
  leg.attempted = true;
  VkExternalMemoryProperties p = device.instance().external_buffer_properties(device.physical(), kOpaque);
  // Whether the driver promised re-export: printed, so a failing leg of a promising driver stands out.
  const bool promised = (p.exportFromImportedHandleTypes & kOpaque) != 0;
  std::vector<std::string> notes{fmt::format("exportFromImported=0x{:x} ({})", p.exportFromImportedHandleTypes,
                                             promised ? "promised" : "not promised")};
  auto done = [&] { rep.detail.push_back(fmt::format("reexport: {}", fmt::join(notes, " "))); };

  ctx.step("vkAllocateMemory(import OPAQUE_FD, exportable as OPAQUE_FD)");
  std::string own1;
  auto second = import_once(device, src, src.fd, true, layout.size, own1);
  notes.push_back("import " + own1);
  if (!second) {
    fail_leg(leg, second.error());
    return done();
  }
  ctx.step("vkGetMemoryFdKHR(OPAQUE_FD) on the imported memory");
  VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  gi.memory = second->memory;
  gi.handleType = kOpaque;
  int raw = -1;
  if (VkResult r = device.fn().vkGetMemoryFdKHR(device.handle(), &gi, &raw); r != VK_SUCCESS) {
    fail_leg(leg, vk::vk_error("vkGetMemoryFdKHR(re-export of imported memory)", r));
    return done();
  }
  os::UniqueFd again(raw);
  ctx.step("vkAllocateMemory(import the re-exported fd) and map it");
  std::string own2;
  auto third = import_once(device, src, again.get(), false, layout.size, own2);
  notes.push_back("reimport " + own2);
  if (!third) {
    fail_leg(leg, third.error());
    return done();
  }
  if (third->mapped == nullptr) {
    fail_leg(leg, Error{"vkMapMemory(re-exported import)", ErrorKind::driver, "not mapped", {}});
    return done();
  }
  std::span<std::byte> view(third->mapped, layout.size);
  // Region A may already hold another leg's bytes (a raw mapping of lavapipe's fd writes B
  // 4096 bytes early, onto A), so the exporter writes a fresh region F for this leg to read.
  ctx.step("server writes region F");
  if (auto w = peer_write(ctx, Region::F); !w) {
    fail_leg(leg, w.error());
    return done();
  }
  ctx.step("read region F through the third mapping");
  read_local(view, layout, Region::F, leg);
  ctx.step("write region D through the third mapping");
  pattern::fill(layout.region(view, Region::D), seed_of(Region::D));
  ctx.step("server checks region D");
  confirm_remote(ctx, Region::D, leg);
  if (!first_import.empty()) {
    // The first import must see the third mapping's write as well: one object, three mappings.
    const bool seen = !pattern::first_mismatch(layout.region(first_import, Region::D), seed_of(Region::D));
    notes.push_back(fmt::format("firstImportSeesD={}", seen ? "yes" : "no"));
    if (!seen) leg.write_ok = false;
  }
  // --measure: the third mapping is a CPU mapping like any other (bytes saved and put back).
  if (leg.read_ok && leg.write_ok) measure::cpu_leg(leg.name, view);
  done();
}

}  // namespace extmem::probe
