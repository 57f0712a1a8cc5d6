// T4-image-opaque-fd (+ @linear): an exportable R8G8B8A8 image filled on the
// owner's GPU, handed over through VK_QUEUE_FAMILY_EXTERNAL as an OPAQUE_FD with
// its full create info, imported into an identical image in a second process
// and compared texel by texel there, then written in a rectangle and checked by
// the owner; two rounds. docs/probe.md, "T4 image rows".
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "probe/routes.h"
#include "probe/routes/t4_image/measure.h"
#include "probe/routes/t4_image/round.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/half_end.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLinearImageLegs[] = {
    {"vkimage", true,
     "the importer's GPU sees every texel of the owner's GPU fill and the owner sees the importer's rectangle "
     "(rest intact), two rounds"},
    {"cpumap", false, "the imported LINEAR image read by CPU at vkGetImageSubresourceLayout's rowPitch matches"},
};
constexpr LegDef kImageLegs[] = {
    {"vkimage", true,
     "the importer's GPU sees every texel of the owner's GPU fill and the owner sees the importer's rectangle "
     "(rest intact), two rounds"},
};

using image::Compare;
using image::Expected;
using image::Rect;

// --measure, once both rounds have decided the leg: the owner refills the image
// and releases it, this side acquires it, times image copies through it against
// a private image (t4_image/measure.h), checks that the copies left the content as
// it was, then releases it and has the owner check it too, so the image ends as
// a round ends. Problems are logged beside the figures and never reach the leg.
void measure_after_verdict(ChildContext& ctx, const vk::Device& d, const vk::Image& img, image::ImageGpu& gpu,
                           const std::string& leg) {
  const Expected kept{image::owner_seed(3)};  // a seed no round uses
  ctx.step("measure: the owner refills the image and releases it");
  if (auto s = image::owner_fill(ctx, kept.base_seed); !s) {
    image::log_error(leg, "owner refill: " + why_of(s.error()));
    return;
  }
  ctx.step("measure: acquire the image, time image copies through it and through a private image");
  if (auto got = gpu.read(); !got) {
    image::log_error(leg, "acquire: " + why_of(got.error()));
    return;
  }
  image::measure_copies(leg, d, img);
  ctx.step("measure: check the content after the copies, release the image, the owner checks it");
  const std::uint32_t w = img.shape.width, h = img.shape.height;
  std::string restore;
  if (auto back = gpu.read(); !back) {
    restore = "read back here: " + why_of(back.error());
  } else if (const Compare c = image::compare(*back, std::size_t{w} * 4, w, h, kept); !c.ok()) {
    restore = "read back here: " + c.text();
  }
  // The release (a rewrite of the same texels) runs even when the check failed, so the owner gets the image back.
  if (auto s = gpu.write(Rect{0, 0, w, h}, kept); !s) {
    restore += (restore.empty() ? "" : "; ") + std::string("release: ") + why_of(s.error());
  } else if (auto c = image::owner_check(ctx, kept); !c) {
    restore += (restore.empty() ? "" : "; ") + std::string("owner check: ") + why_of(c.error());
  } else if (!c->ok()) {
    restore += (restore.empty() ? "" : "; ") + std::string("owner read: ") + c->text();
  }
  image::log_restored(leg, restore);
}

// The importer's GPU side of a round: acquire and copy out (round 1 with the
// test faults "discard" and "undefined": a first acquire from UNDEFINED, which
// may discard), then the rectangle written on the GPU and the image released.
image::Importer vulkan_importer(ChildContext& ctx, image::ImageGpu& gpu, bool& from_undefined) {
  image::Importer imp;
  imp.who = "importer";
  imp.read = [&ctx, &gpu, &from_undefined](int round) -> Result<std::span<const std::byte>> {
    // The acquire's layouts are the release's (GENERAL).
    VkImageLayout old_layout = image::kHandoverLayout;
    ctx.step(fmt::format("round {}: acquire the image from VK_QUEUE_FAMILY_EXTERNAL and copy it out", round));
    if (round == 1 && ctx.test_fault("round 1: acquire", "discard")) {
      // Test-only: the deliberate discard (a driver that drops content at a transition from UNDEFINED).
      if (auto s = gpu.discard_like_undefined(); !s) return s.error();
      from_undefined = true;
    } else if (round == 1 && ctx.test_fault("round 1: acquire", "undefined")) {
      old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
      from_undefined = true;
    }
    return gpu.read(old_layout);
  };
  imp.write = [&ctx, &gpu](int round, const Rect& rect) -> Result<Expected> {
    const Expected after{image::owner_seed(round), rect, image::importer_seed(round)};
    ctx.step(fmt::format("round {}: write the importer's rectangle on the GPU and release the image", round));
    if (auto s = gpu.write(rect, after); !s) return s.error();
    return after;
  };
  return imp;
}

// Round 1 of a LINEAR image: the same texels read through the CPU mapping at
// vkGetImageSubresourceLayout's rowPitch, for the informational leg.
void check_cpu_map(ChildContext& ctx, const vk::Device& d, const vk::Image& img, std::uint32_t type_index,
                   const Expected& want, RouteReport& rep, Leg& cpu) {
  ctx.step("round 1: read the LINEAR image through the CPU mapping at vkGetImageSubresourceLayout's rowPitch");
  if (img.mapped == nullptr) {
    image::add_note(cpu, fmt::format("memory type {} is not HOST_VISIBLE: no CPU mapping", type_index));
    return;
  }
  const std::uint32_t w = img.shape.width, h = img.shape.height;
  const VkSubresourceLayout sl = vk::linear_layout(d, img);
  cpu.attempted = true;
  if (sl.offset + sl.size > img.allocation_size || sl.rowPitch < std::size_t{w} * 4) {
    image::add_note(cpu, fmt::format("subresource layout offset={} size={} rowPitch={} does not fit the allocation",
                                     sl.offset, sl.size, sl.rowPitch));
    return;
  }
  const Compare c =
      image::compare(std::span<const std::byte>(img.mapped + sl.offset, sl.size), sl.rowPitch, w, h, want);
  cpu.read_ok = c.ok();
  rep.detail.push_back(fmt::format("cpumap offset={} rowPitch={}: {}", sl.offset, sl.rowPitch, c.text()));
  if (!c.ok()) image::add_note(cpu, c.text());
}

// The device and the import support, before the fd is touched: the extension,
// the owner's deviceUUID (an OPAQUE_FD may only be imported by a device of the
// same deviceUUID and driverUUID: Vulkan spec, "External Memory Handle Types"),
// and the format's OPAQUE_FD import support. Returns null with the row's facts
// or the leg's failure set.
std::shared_ptr<vk::Device> open_importer(ChildContext& ctx, const image::ImportedSetup& in, RouteReport& rep,
                                          Leg& vki) {
  auto dev = open_device(ctx, export_extensions(kOpaqueFd));
  if (!dev) {
    fail_leg(vki, dev.error());
    return nullptr;
  }
  const vk::Device& d = **dev;
  if (auto missing = missing_extension(d, kOpaqueFd)) {
    rep.facts.unsupported = "client: " + *missing;
    return nullptr;
  }
  const std::string owner_uuid = in.setup.info.device_uuid.value_or(std::string());
  if (owner_uuid != d.device_uuid()) {
    rep.facts.unsupported = fmt::format("client: deviceUUID {} differs from the owner's {}", d.device_uuid(), owner_uuid);
    return nullptr;
  }
  ctx.step("vkGetPhysicalDeviceImageFormatProperties2(OPAQUE_FD import)");
  const vk::ExternalImageSupport support =
      vk::external_image_support(d.instance(), d.physical(), in.shape, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT);
  if (!support.importable()) {
    rep.facts.unsupported = fmt::format("client: {} OPAQUE_FD images are not importable ({}, externalMemoryFeatures=0x{:x})",
                                        vk::tiling_name(in.shape.tiling), vk::result_name(support.result),
                                        support.external.externalMemoryFeatures);
    return nullptr;
  }
  return *dev;
}

// The import: an image of the owner's create info on the owner's memory type
// and dedicated choice (VkImportMemoryFdInfoKHR requires both), mapped when
// LINEAR and HOST_VISIBLE. Returns nullopt with the leg's failure (and, for a
// refused allocation, the row's facts) set.
std::optional<vk::Image> import_image(ChildContext& ctx, const vk::Device& d, const image::ImportedSetup& in,
                                        RouteReport& rep, Leg& vki) {
  const auto& info = in.setup.info;
  const auto type_index = info.memory_type_index.value_or(0u);
  auto dup = ImportDup::of(in.setup.fd.get());
  if (!dup) {
    fail_leg(vki, dup.error());
    return std::nullopt;
  }
  ctx.step("vkAllocateMemory(import OPAQUE_FD image)");
  vk::ImageRequest req;
  req.shape = in.shape;
  req.external_handle_types = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  req.import_fd = dup->number();
  req.allocation_size = info.allocation_size.value_or(std::uint64_t{0});
  req.memory_type_index = static_cast<int>(type_index);
  req.dedicated = info.dedicated.value_or(false) ? 1 : 0;
  const bool host_visible = type_index < d.memory_properties().memoryTypeCount &&
                            (d.memory_properties().memoryTypes[type_index].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  req.map = in.shape.tiling == VK_IMAGE_TILING_LINEAR && host_visible;
  vk::AllocationFailure af;
  auto img = vk::create_image(d, req, &af);
  // A successful import owns the fd (Vulkan spec, "Importing memory from a file descriptor").
  rep.detail.push_back("vkimage " + dup->settle(img || af.memory_allocated));
  if (!img) {
    fail_leg(vki, af.error);
    if (af.at_allocate) {
      // Import support was reported (open_importer checked), so a refusal is classified as such.
      SiteFailure s = classify_site(af.error, true, "OPAQUE_FD image import");
      if (s.unsupported) rep.facts.unsupported = "client: " + s.why;
    }
    return std::nullopt;
  }
  return std::move(*img);
}

int importer(ChildContext& ctx, VkImageTiling tiling) {
  const bool linear = tiling == VK_IMAGE_TILING_LINEAR;
  Leg vki = report_leg({kLinearImageLegs, "vkimage"});
  Leg cpu = report_leg({kLinearImageLegs, "cpumap"});
  DrivingHalf half(ctx, {&vki});
  RouteReport& rep = half.rep;
  if (linear) half.also_report(cpu);
  auto in = image::await_image(ctx, half);
  if (!in) return half.finish();
  const auto& info = in->setup.info;
  const auto type_index = info.memory_type_index.value_or(0u);
  rep.detail.push_back(fmt::format("image={}x{} {} {} usage=0x{:x} allocation={} memoryType={} dedicated={} "
                                   "(required={} preferred={}) fd={}",
                                   in->shape.width, in->shape.height, info.image->format_name,
                                   vk::tiling_name(in->shape.tiling), in->shape.usage,
                                   info.allocation_size.value_or(std::uint64_t{0}), type_index,
                                   info.dedicated.value_or(false) ? "yes" : "no",
                                   info.image->dedicated_required ? "yes" : "no",
                                   info.image->dedicated_preferred ? "yes" : "no",
                                   info.fd_target.value_or(std::string("?"))));
  vki.attempted = true;
  auto dev = open_importer(ctx, *in, rep, vki);
  if (!dev) return half.finish();
  const vk::Device& d = *dev;
  auto img = import_image(ctx, d, *in, rep, vki);
  if (!img) return half.finish();
  auto gpu = image::ImageGpu::create(d, *img);
  if (!gpu) {
    fail_leg(vki, gpu.error());
    return half.finish();
  }

  bool from_undefined = false;
  image::Importer imp = vulkan_importer(ctx, *gpu, from_undefined);
  imp.after_read = [&](int round, const Compare& got, const Expected& want) {
    if (from_undefined && round == 1) {
      // Reported as such: content lost after the importer's own UNDEFINED transition is that transition's doing.
      rep.detail.push_back(got.ok() ? "first acquire from VK_IMAGE_LAYOUT_UNDEFINED: the content survived here "
                                      "(the spec allows it to be discarded)"
                                    : "first acquire from VK_IMAGE_LAYOUT_UNDEFINED discarded the content");
      if (!got.ok())
        image::add_note(vki, "the importer's first transition from VK_IMAGE_LAYOUT_UNDEFINED discarded the owner's "
                             "content; acquire in the release's layout");
    }
    if (linear && round == 1) check_cpu_map(ctx, d, *img, type_index, want, rep, cpu);
  };
  if (!image::run_rounds(ctx, imp, image::remote_owner(ctx), in->shape.width, in->shape.height, vki)) return half.finish();
  if (vki.read_ok && vki.write_ok && measure::enabled()) measure_after_verdict(ctx, d, *img, *gpu, vki.name);
  rep.detail.push_back(image::rounds_detail(in->shape.width, in->shape.height) +
                       " handover=GENERAL via VK_QUEUE_FAMILY_EXTERNAL");
  return half.finish();
}

constexpr FaultDef kImageFaults[] = {
    image::kDecoyFault,
    image::transpose_fault(Role::client),
    image::mirror_fault(Role::client),
    {"discard", Role::client, "round 1: acquire",
     "the importer's first acquire clears the image from UNDEFINED, as a driver that drops content there would: the "
     "row must FAIL, no texel seen"},
    {"undefined", Role::client, "round 1: acquire",
     "the importer's first acquire transitions from UNDEFINED (the spec allows the content to be discarded): the "
     "detail says whether it survived"},
};

const RouteDef kT4ImageOpaqueFd{
    .row = "T4-image-opaque-fd",
    .group = "t4",
    .needs = {.extensions = needs::kFdMemory},
    .legs = kImageLegs,
    .faults = kImageFaults,
    .server = {"creates an OPTIMAL image, fills it on the GPU, exports an opaque fd, serves checks",
               [](ChildContext& c) { return image::owner_serve(c, VK_IMAGE_TILING_OPTIMAL); }},
    .client = {"imports the fd into an identical image, compares every texel, writes a rectangle, drives",
               [](ChildContext& c) { return importer(c, VK_IMAGE_TILING_OPTIMAL); }},
    .passes_fds = true};
const RouteDef kT4ImageOpaqueFdLinear{
    .row = "T4-image-opaque-fd@linear",
    .group = "t4",
    .needs = {.extensions = needs::kFdMemory},
    .legs = kLinearImageLegs,
    .faults = kImageFaults,
    .server = {"creates a LINEAR image, fills it on the GPU, exports an opaque fd, serves checks",
               [](ChildContext& c) { return image::owner_serve(c, VK_IMAGE_TILING_LINEAR); }},
    .client = {"imports the fd into an identical image, compares every texel (GPU and CPU), writes a rectangle, drives",
               [](ChildContext& c) { return importer(c, VK_IMAGE_TILING_LINEAR); }},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT4ImageOpaqueFd, 170);
EXTMEM_ROUTE(kT4ImageOpaqueFdLinear, 180);

}  // namespace extmem::probe
