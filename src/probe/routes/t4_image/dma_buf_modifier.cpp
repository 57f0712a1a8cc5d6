// T4-image-dma-buf-modifier: an image shared as a dma-buf with an explicit DRM
// format modifier (VK_EXT_image_drm_format_modifier + VK_EXT_external_memory_dma_buf).
// What is built: the capability part, which decides the row on every driver we
// have, naming exactly what is missing: each absent extension, and for each
// modifier the driver lists for R8G8B8A8_UNORM the DMA_BUF image query's answer.
// A driver that lists a modifier usable for DMA_BUF export and import gets SKIP
// "not built yet" with those modifiers, never a verdict the probe did not earn.
// docs/probe.md, "T4 image rows".
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "probe/routes.h"
#include "probe/routes/vk/export.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "vulkan/image.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kDmaBufImageLegs[] = {
    {"dmabufimage", true,
     "an image exported as a dma-buf with a listed DRM modifier, imported with its plane layouts, compares texel by "
     "texel"},
};

int modifier_check(ChildContext& ctx) {
  Leg leg = report_leg({kDmaBufImageLegs, "dmabufimage"});
  DrivingHalf half(ctx, {&leg}, Peer::none);
  RouteReport& rep = half.rep;
  auto dev = open_device(ctx, export_extensions(kDmaBuf));
  if (!dev) {
    stop_row(rep.facts, dev.error().kind, why_of(dev.error()));
    return half.finish();
  }
  const vk::Device& d = **dev;
  ctx.step("vkEnumerateDeviceExtensionProperties(VK_EXT_image_drm_format_modifier, VK_EXT_external_memory_dma_buf)");
  const std::vector<std::string> exts = d.instance().device_extensions(d.physical());
  auto exposed = [&](const char* e) { return std::find(exts.begin(), exts.end(), e) != exts.end(); };
  std::vector<std::string> missing;
  for (const char* e : {VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME, VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME,
                        VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME})
    if (!exposed(e)) missing.emplace_back(e);

  std::string modifiers;
  std::vector<std::string> usable;
  if (exposed(VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME)) {
    ctx.step("vkGetPhysicalDeviceFormatProperties2(R8G8B8A8_UNORM, VkDrmFormatModifierPropertiesListEXT) and the "
             "DMA_BUF image query per modifier");
    for (const vk::DrmModifierInfo& m : vk::drm_modifiers(d.instance(), d.physical())) {
      modifiers += fmt::format("{}0x{:016x}: {}", modifiers.empty() ? "" : ", ", m.modifier, m.dma_buf_result);
      if (m.dma_buf_succeeded())
        modifiers += fmt::format(" export={} import={}", m.dma_buf_exportable ? "yes" : "no",
                                 m.dma_buf_importable ? "yes" : "no");
      if (m.dma_buf_exportable && m.dma_buf_importable) usable.push_back(fmt::format("0x{:016x}", m.modifier));
    }
    rep.detail.push_back("modifiers: " + (modifiers.empty() ? std::string("none listed") : modifiers));
  }
  if (!missing.empty() || usable.empty()) {
    std::string why;
    for (const std::string& m : missing) why += fmt::format("{}{}", why.empty() ? "" : ", ", m);
    if (!why.empty()) why += " not exposed by the device";
    if (exposed(VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME))
      why += fmt::format("{}no modifier listed for R8G8B8A8_UNORM is DMA_BUF exportable and importable ({})",
                         why.empty() ? "" : "; ", modifiers.empty() ? "none listed" : modifiers);
    rep.facts.unsupported = why;
    return half.finish();
  }
  rep.facts.skip = fmt::format("the export with an explicit modifier list and the import with the exporter's plane "
                               "layouts are not built yet; DMA_BUF-capable modifiers here: {}",
                               fmt::join(usable, ", "));
  return half.finish();
}

const RouteDef kT4ImageDmaBufModifier{
    .row = "T4-image-dma-buf-modifier",
    .group = "t4",
    .legs = kDmaBufImageLegs,
    .server = {"checks the DRM modifier and dma-buf extensions and each listed modifier's DMA_BUF image support",
               modifier_check},
    .measured = false};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT4ImageDmaBufModifier, 210);

}  // namespace extmem::probe
