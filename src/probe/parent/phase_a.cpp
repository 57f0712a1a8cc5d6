#include "probe/parent/phase_a.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "probe/gl_driver.h"

namespace extmem::probe {

RunContext read_run_context() {
  RunContext c;
  c.uid = ::getuid();
  c.pid = ::getpid();
  std::ifstream attr("/proc/self/attr/current");
  std::getline(attr, c.selinux);
  while (!c.selinux.empty() && (c.selinux.back() == '\0' || c.selinux.back() == '\n')) c.selinux.pop_back();
  // Without SELinux the file is absent or holds AppArmor's "unconfined"; both mean no SELinux domain.
  if (c.selinux.empty() || c.selinux.find(':') == std::string::npos) c.selinux = "none";
  utsname u{};
  if (::uname(&u) == 0) {
    c.kernel = u.release;
    c.hostname = u.nodename;
  }
  std::error_code ec;  // no /dev/dri at all is the common answer (containers, CI), not an error
  for (const auto& entry : std::filesystem::directory_iterator("/dev/dri", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("renderD", 0) == 0) c.drm_render_nodes.push_back(entry.path().string());
  }
  std::sort(c.drm_render_nodes.begin(), c.drm_render_nodes.end());
  return c;
}

void print_context(std::ostream& out, const RunContext& c) {
  out << fmt::format("== phase A: run context\nuid={} pid={} selinux={} kernel={}\n", c.uid, c.pid, c.selinux, c.kernel);
  out << fmt::format("  DRM render nodes: {}\n",
                     c.drm_render_nodes.empty() ? std::string("none (no /dev/dri/renderD*)") : fmt::format("{}", fmt::join(c.drm_render_nodes, " ")));
  if (!c.private_runtime_dir.empty())
    out << fmt::format("  XDG_RUNTIME_DIR: {}; the probe's processes use a private {} (0700, removed at exit)\n",
                       c.runtime_dir_was, c.private_runtime_dir);
}

void print_vulkan(std::ostream& out, const vk::VulkanEnumeration& e, int selected, bool brief) {
  out << fmt::format("== phase A: Vulkan (loader {}), {} device(s)\n", e.loader_version, e.devices.size());
  for (const vk::DeviceInfo& d : e.devices) {
    out << fmt::format("device {}: {} [{}] vendor=0x{:04x} device=0x{:04x} api={} driver={} ({}){}\n", d.index, d.name,
                       d.device_type, d.vendor_id, d.device_id, d.api_version, d.driver_name, d.driver_info,
                       static_cast<int>(d.index) == selected ? "  <- selected" : "");
    out << fmt::format("  deviceUUID={} driverUUID={}\n", d.device_uuid, d.driver_uuid);
    if (brief) continue;
    for (std::size_t h = 0; h < d.heaps.size(); ++h)
      out << fmt::format("  heap {}: {} MiB {}\n", h, d.heaps[h].size >> 20, d.heaps[h].flag_names);
    for (const vk::MemoryTypeInfo& t : d.types)
      out << fmt::format("  memory type {}: heap {} {}\n", t.index, t.heap_index, t.flag_names.empty() ? "(none)" : t.flag_names);
    std::string exts;
    for (const auto& [name, present] : d.extensions) exts += fmt::format(" {}={}", name, present ? "yes" : "no");
    out << "  extensions:" << exts << "\n";
    if (d.min_imported_host_pointer_alignment != 0)
      out << fmt::format("  minImportedHostPointerAlignment={}\n", d.min_imported_host_pointer_alignment);
    for (const vk::ExternalBufferInfo& x : d.external_buffers)
      out << fmt::format("  external buffer {}: export={} import={} dedicated-only={} compatible=0x{:x} exportFrom=0x{:x}\n",
                         x.handle_type, x.exportable ? "yes" : "no", x.importable ? "yes" : "no",
                         x.dedicated_only ? "yes" : "no", x.compatible, x.export_from);
    for (const vk::ExternalSemaphoreInfo& x : d.external_semaphores)
      out << (x.queried ? fmt::format("  external semaphore {} {}: export={} import={} compatible=0x{:x} exportFrom=0x{:x}\n",
                                      x.handle_type, x.semaphore_type, x.exportable ? "yes" : "no",
                                      x.importable ? "yes" : "no", x.compatible, x.export_from)
                        : fmt::format("  external semaphore {} {}: not queried (no VK_KHR_timeline_semaphore)\n",
                                      x.handle_type, x.semaphore_type));
    out << fmt::format("  maxImageDimension2D={}\n", d.max_image_dimension_2d);
    for (const vk::ExternalImageInfo& x : d.external_images) {
      if (!x.succeeded()) {
        out << fmt::format("  external image R8G8B8A8_UNORM {} {}: {}\n", x.tiling, x.handle_type, x.result);
        continue;
      }
      out << fmt::format("  external image R8G8B8A8_UNORM {} {}: export={} import={} dedicated-only={} compatible=0x{:x} "
                         "exportFrom=0x{:x} maxExtent={}x{} mips={} layers={}\n",
                         x.tiling, x.handle_type, x.exportable ? "yes" : "no", x.importable ? "yes" : "no",
                         x.dedicated_only ? "yes" : "no", x.compatible, x.export_from, x.max_width, x.max_height,
                         x.max_mip_levels, x.max_array_layers);
    }
    const bool has_mods = std::any_of(d.extensions.begin(), d.extensions.end(), [](const auto& e) {
      return e.first == "VK_EXT_image_drm_format_modifier" && e.second;
    });
    if (!has_mods) out << "  DRM format modifiers: n/a (VK_EXT_image_drm_format_modifier not exposed)\n";
    else if (d.drm_modifiers.empty()) out << "  DRM format modifiers for R8G8B8A8_UNORM: none listed\n";
    for (const vk::DrmModifierInfo& m : d.drm_modifiers)
      out << fmt::format("  DRM format modifier 0x{:016x}: planes={} tilingFeatures=0x{:x} DMA_BUF {}{}\n", m.modifier,
                         m.plane_count, m.tiling_features, m.dma_buf_result,
                         m.dma_buf_succeeded()
                             ? fmt::format(" export={} import={}", m.dma_buf_exportable ? "yes" : "no", m.dma_buf_importable ? "yes" : "no")
                             : std::string());
  }
}

void print_gles(std::ostream& out, const Result<gles::GlesInfo>& r, const vk::DeviceInfo& vk) {
  if (!r) {
    out << "== phase A: EGL/GLES: no context: " << r.error().message() << "\n";
    return;
  }
  const gles::GlesInfo& g = *r;
  out << fmt::format("== phase A: EGL/GLES ({} platform)\nEGL {} ({}); GL_VENDOR={} GL_RENDERER={} GL_VERSION={}\n",
                     g.platform, g.egl_version, g.egl_vendor, g.gl_vendor, g.gl_renderer, g.gl_version);
  std::string exts;
  for (const auto& [name, present] : g.extensions) exts += fmt::format(" {}={}", name, present ? "yes" : "no");
  out << "  extensions:" << exts << "\n";
  out << fmt::format("  GL_DEVICE_UUID_EXT={} ({} Vulkan deviceUUID) GL_DRIVER_UUID_EXT={} ({} Vulkan driverUUID)\n",
                     g.device_uuid.empty() ? "n/a" : g.device_uuid, gles::compare_uuid(g.device_uuid, vk.device_uuid),
                     g.driver_uuid.empty() ? "n/a" : g.driver_uuid, gles::compare_uuid(g.driver_uuid, vk.driver_uuid));
}

void print_gl_driver(std::ostream& out, const GlDriverChoice& c, const Result<gles::GlesInfo>& info) {
  out << fmt::format("== phase A: GL driver: {} (requested {}): {}; env set: {}\n", c.served, c.requested, c.why,
                     c.env_text());
  if (info && !renderer_matches(c, info->gl_renderer))
    out << fmt::format("  but GL_RENDERER={} is not {}: the environment did not reach Mesa's loader\n", info->gl_renderer,
                       c.served);
}

}  // namespace extmem::probe
