// T1: the server exports its own Vulkan allocation as an fd (opaque fd or
// dma-buf); the client maps the fd and imports it into its own Vulkan device.
// docs/probe.md, "T1".
#include <sys/mman.h>

#include <functional>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/gpu_access.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/t1/reexport.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

// The fd imported into this side's own Vulkan device as a mapped buffer.
struct ImportedBuffer {
  std::shared_ptr<vk::Device> dev;  ///< null when no device was opened
  vk::Buffer buf;                   ///< unmapped (mapped == nullptr) when the import failed
};

// With --measure: which heap the gpu leg's copies use, and the import's latency.
void measure_import(ChildContext& ctx, const HandleKind& h, const vk::Device& dev, const vk::Buffer& buf,
                    vk::AllocationRequest req, int fd, const Leg& vki, const Leg& gpu) {
  // Whether the GPU copies of the gpu leg cross the bus: the heap of the exporter's memory type.
  const VkPhysicalDeviceMemoryProperties& mp = dev.memory_properties();
  const bool device_heap = buf.memory_type_index < mp.memoryTypeCount &&
                           (mp.memoryHeaps[mp.memoryTypes[buf.memory_type_index].heapIndex].flags &
                            VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
  if (LegFigures* m = measure::leg(gpu.name)) m->gpu_shared_memory = device_heap ? "device-local" : "host";
  if (!measure::enabled()) return;
  ctx.step(fmt::format("measure import latency ({})", h.name));
  req.import_fd = fd;  // measure::import_leg imports a fresh dup of it each time
  measure::import_leg(vki.name, dev, req);
}

// The import: an opaque fd on the exporter's memory type (Vulkan spec,
// VkImportMemoryFdInfoKHR: it must be the same), a dma-buf on a HOST_VISIBLE
// type vkGetMemoryFdPropertiesKHR allows, with the exporter's allocation size
// and dedicated choice. A refusal fails vkimport; where the handle type was
// advertised importable the site says whether that is UNSUPPORTED.
ImportedBuffer import_buffer(ChildContext& ctx, const HandleKind& h, const Setup& setup, RouteReport& rep, Leg& vki,
                             const Leg& gpu) {
  ImportedBuffer im;
  auto d = open_device(ctx, export_extensions(h));
  if (!d) {
    fail_leg(vki, d.error());
    return im;
  }
  if (auto missing = missing_extension(**d, h)) {
    rep.facts.unsupported = "client: " + *missing;
    return im;
  }
  im.dev = std::move(*d);
  const bool importable = advertised(*im.dev, h.bit, VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT);
  auto dup = ImportDup::of(setup.fd.get());
  vk::AllocationRequest req;
  req.size = ctx.layout().size;
  req.external_handle_types = h.bit;
  req.import_fd_type = h.bit;
  req.allocation_size = setup.info.allocation_size.value_or(std::uint64_t{0});
  req.dedicated = setup.info.dedicated.value_or(false) ? 1 : 0;
  if (h.bit == VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT) {
    req.memory_type_index = static_cast<int>(setup.info.memory_type_index.value_or(0u));
  } else if (dup) {
    ctx.step(fmt::format("vkGetMemoryFdPropertiesKHR({})", h.name));
    VkMemoryFdPropertiesKHR props{VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR};
    VkResult r = im.dev->fn().vkGetMemoryFdPropertiesKHR(im.dev->handle(), h.bit, dup->number(), &props);
    if (r != VK_SUCCESS) fail_leg(vki, vk::vk_error("vkGetMemoryFdPropertiesKHR", r));
    req.allowed_type_bits = props.memoryTypeBits;
    req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  }
  if (!dup) {
    fail_leg(vki, dup.error());
    return im;
  }
  if (!vki.failed_step.empty()) return im;
  ctx.step(fmt::format("vkAllocateMemory(import {})", h.name));
  req.import_fd = dup->number();
  vk::AllocationFailure af;
  auto imported = im.dev->create_buffer(req, &af);
  // A successful import owns the fd (Vulkan spec, "Importing memory from a file descriptor").
  rep.detail.push_back("vkimport " + dup->settle(imported || af.memory_allocated));
  if (!imported) {
    fail_leg(vki, af.error);
    if (af.at_allocate) {
      SiteFailure s = classify_site(af.error, importable, std::string(h.name) + " import");
      if (s.unsupported) rep.facts.unsupported = "client: " + s.why;
    }
    return im;
  }
  im.buf = std::move(*imported);
  measure_import(ctx, h, *im.dev, im.buf, req, setup.fd.get(), vki, gpu);
  return im;
}

// The regions through both views and the GPU, then the whole allocation and
// the alias checks. Every read comes before any write: an fd that maps at an
// offset would otherwise have the payload overwritten by this side's first write.
void check_views(ChildContext& ctx, const ImportedBuffer& im, std::span<std::byte> raw_view,
                 std::span<std::byte> vk_view, Leg& raw, Leg& vki, Leg& gpu) {
  const Layout& layout = ctx.layout();
  if (!raw_view.empty()) {
    ctx.step("read region A through the raw mapping");
    read_local(raw_view, layout, Region::A, raw);
  }
  if (!vk_view.empty()) {
    ctx.step("read region A through the Vulkan mapping");
    read_local(vk_view, layout, Region::A, vki);
    ctx.step("GPU access on the imported memory");
    gpu_access(*im.dev, im.buf.buffer, layout, Region::A, gpu);
  }
  if (!raw_view.empty()) {
    ctx.step("write region B through the raw mapping");
    pattern::fill(layout.region(raw_view, Region::B), seed_of(Region::B));
    ctx.step("server checks region B");
    confirm_remote(ctx, Region::B, raw);
  }
  if (!vk_view.empty()) {
    ctx.step("write region C through the Vulkan mapping");
    pattern::fill(layout.region(vk_view, Region::C), seed_of(Region::C));
    ctx.step("server checks region C");
    confirm_remote(ctx, Region::C, vki);
    if (gpu.failed_step.empty()) {
      ctx.step("server checks region E (GPU write)");
      confirm_remote(ctx, Region::E, gpu);
      gpu_whole(ctx, *im.dev, im.buf.buffer, layout.size, peer_far(ctx, layout.size), gpu);
    }
  }
}

int client(ChildContext& ctx, const HandleKind& h) {
  const Layout& layout = ctx.layout();
  // One client for both rows; each row's table says whether rawmmap is decisive.
  Leg raw = route_leg(ctx, "rawmmap");
  Leg vki = route_leg(ctx, "vkimport");
  Leg gpu = route_leg(ctx, "gpu");
  // Opaque fds only: re-export of imported memory (t1/reexport.h); notrun when the import failed.
  const bool reexports = h.bit == VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  Leg reexp = route_leg(ctx, "reexport");
  DrivingHalf half(ctx, {&raw, &vki, &gpu});
  RouteReport& rep = half.rep;
  if (reexports) half.also_report(reexp);

  auto setup = half.start("the server's export");
  if (!setup) return half.finish();
  const auto alloc_size = setup->info.allocation_size.value_or(std::uint64_t{0});
  const auto type_index = setup->info.memory_type_index.value_or(0u);
  const bool dedicated = setup->info.dedicated.value_or(false);
  const auto fd_size = setup->info.fd_size.value_or(std::uint64_t{0});
  rep.detail.push_back(fmt::format("allocation={} memoryType={} dedicated={} fdSize={} fd={}", alloc_size, type_index,
                                   dedicated ? "yes" : "no", fd_size == 0 ? std::string("unknown") : std::to_string(fd_size),
                                   setup->info.fd_target.value_or(std::string("?"))));
  if (alloc_size < layout.size) {
    rep.facts.fatal = fmt::format("server announced allocation {} < size {}", alloc_size, layout.size);
    return half.finish();
  }

  // (a) the fd as a plain CPU mapping.
  ctx.step("mmap(exported fd)");
  raw.attempted = true;
  auto raw_map = os::Mapping::map(setup->fd.get(), alloc_size, MAP_SHARED);
  if (!raw_map) fail_leg(raw, raw_map.error());
  // (b) the fd imported into our own Vulkan device.
  vki.attempted = true;
  ImportedBuffer im = import_buffer(ctx, h, *setup, rep, vki, gpu);
  std::span<std::byte> raw_view = raw_map ? raw_map->bytes() : std::span<std::byte>{};
  std::span<std::byte> vk_view = im.buf.mapped != nullptr ? std::span<std::byte>(im.buf.mapped, layout.size)
                                                          : std::span<std::byte>{};
  check_views(ctx, im, raw_view, vk_view, raw, vki, gpu);
  if (reexports && !vk_view.empty())
    reexport_leg(ctx, *im.dev, ReexportSource{setup->fd.get(), alloc_size, type_index, dedicated}, vk_view, reexp,
                 rep);
  if (!raw_view.empty()) alias_leg(ctx, raw_view, raw);
  if (!vk_view.empty()) alias_leg(ctx, vk_view, vki);
  GpuRound round = [&](Region read, std::uint64_t read_seed, Region write, std::uint64_t write_seed) {
    return gpu_round(*im.dev, im.buf.buffer, layout, read, read_seed, write, write_seed);
  };
  return vk_view.empty() ? half.finish() : half.finish(SoakPlan{0, vk_view, Region::C, Region::B, Region::E, &round});
}

// rawmmap is informational for an opaque fd (the handle is only promised to
// Vulkan) and decisive for a dma-buf (a CPU mapping is what it is for).
constexpr std::string_view kDmaBufExtensions[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
                                                  VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME};
constexpr HandleNeed kDmaBufBoth[] = {{"DMA_BUF", HandleFeature::exportable}, {"DMA_BUF", HandleFeature::importable}};
constexpr LegDef kOpaqueFdLegs[] = {
    {"rawmmap", false, "the exported fd mapped with mmap shares the allocation's bytes"},
    {"vkimport", true, "the fd imported into a second Vulkan device and mapped shares the bytes"},
    {"gpu", true, "the importer's GPU reads and writes the shared bytes, seen by the exporter"},
    {"reexport", false,
     "the imported memory re-exported (vkGetMemoryFdKHR) and imported again shares the bytes both ways "
     "(informational: exportFromImportedHandleTypes is the driver's promise, printed in the detail)"},
};
constexpr LegDef kDmaBufLegs[] = {
    {"rawmmap", true, "the exported dma-buf mapped with mmap shares the allocation's bytes"},
    {"vkimport", true, "the dma-buf imported into a second Vulkan device and mapped shares the bytes"},
    {"gpu", true, "the importer's GPU reads and writes the shared bytes, seen by the exporter"},
};

constexpr FaultDef kExportFaults[] = {kCloseFdFault};

const RouteDef kT1OpaqueFd{
    .row = "T1-opaque-fd",
    .group = "t1",
    .needs = {.extensions = needs::kFdMemory, .handle_types = needs::kOpaqueFdBoth},
    .legs = kOpaqueFdLegs,
    .faults = kExportFaults,
    .memory_types = MemoryTypes::exporter_picks,
    .server = {"allocates Vulkan memory, exports an opaque fd, serves",
               [](ChildContext& c) { return export_and_serve(c, kOpaqueFd); }},
    .client = {"maps and imports the fd into Vulkan, drives", [](ChildContext& c) { return client(c, kOpaqueFd); }},
    .passes_fds = true};
const RouteDef kT1DmaBuf{
    .row = "T1-dma-buf",
    .group = "t1",
    .needs = {.extensions = kDmaBufExtensions, .handle_types = kDmaBufBoth},
    .legs = kDmaBufLegs,
    .faults = kExportFaults,
    .memory_types = MemoryTypes::exporter_picks,
    .server = {"allocates Vulkan memory, exports a dma-buf fd, serves",
               [](ChildContext& c) { return export_and_serve(c, kDmaBuf); }},
    .client = {"maps and imports the fd into Vulkan, drives", [](ChildContext& c) { return client(c, kDmaBuf); }},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1OpaqueFd, 30);
EXTMEM_ROUTE(kT1DmaBuf, 40);

}  // namespace extmem::probe
