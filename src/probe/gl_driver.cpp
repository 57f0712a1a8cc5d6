#include "probe/gl_driver.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "extmem/probe/probe.h"

namespace extmem::probe {
namespace {

constexpr std::uint32_t kVendorIdMesa = 0x10005;  // VK_VENDOR_ID_MESA

// Mesa's loader (22.3) takes the DRI driver from MESA_LOADER_DRIVER_OVERRIDE.
// Without /dev/dri (these machines have none) zink only starts on the software
// path, LIBGL_ALWAYS_SOFTWARE=1, where it opens the CPU Vulkan device, lavapipe
// (measured: the override alone leaves eglInitialize at EGL_NOT_INITIALIZED).
// swrast is the software DRI driver; GALLIUM_DRIVER keeps it on llvmpipe rather
// than softpipe.
void add_zink(GlDriverChoice& c) {
  c.env = {{"LIBGL_ALWAYS_SOFTWARE", "1"}, {"MESA_LOADER_DRIVER_OVERRIDE", "zink"}};
}

void add_llvmpipe(GlDriverChoice& c) {
  c.env = {{"LIBGL_ALWAYS_SOFTWARE", "1"}, {"MESA_LOADER_DRIVER_OVERRIDE", "swrast"}, {"GALLIUM_DRIVER", "llvmpipe"}};
}

std::string describe(const VulkanDriverFacts& d) {
  return fmt::format("\"{}\" (driver {}, vendor 0x{:x})", d.device_name, d.driver_name.empty() ? "unnamed" : d.driver_name,
                     d.vendor_id);
}

}  // namespace

std::string GlDriverChoice::env_text() const {
  std::string s;
  for (const auto& [name, value] : env) s += fmt::format("{}{}={}", s.empty() ? "" : " ", name, value);
  return s.empty() ? "none" : s;
}

bool gl_driver_name_ok(std::string_view name) {
  for (GlDriverRequest r : {GlDriverRequest::automatic, GlDriverRequest::system, GlDriverRequest::zink, GlDriverRequest::llvmpipe})
    if (name == to_string(r)) return true;
  return false;
}

bool is_lavapipe(const VulkanDriverFacts& device) {
  return device.vendor_id == kVendorIdMesa && device.driver_name == "llvmpipe";
}

VulkanDriverFacts facts_of(const vk::DeviceInfo& device) { return {device.vendor_id, device.name, device.driver_name}; }

GlDriverChoice choose_gl_driver(std::string_view requested, const std::optional<VulkanDriverFacts>& device,
                                const char* user_override, const std::string& vendor_file) {
  GlDriverChoice c;
  c.requested = std::string(requested);
  const std::string replaced =
      user_override != nullptr ? fmt::format("; replaces MESA_LOADER_DRIVER_OVERRIDE={} from the environment", user_override)
                               : std::string();
  if (requested == "system") {
    c.served = "system";
    c.why = "--gl-driver=system: the environment and libEGL choose";
  } else if (requested == "zink") {
    c.served = "zink";
    add_zink(c);
    c.why = "--gl-driver=zink" + replaced;
  } else if (requested == "llvmpipe") {
    c.served = "llvmpipe";
    add_llvmpipe(c);
    c.why = "--gl-driver=llvmpipe" + replaced;
  } else if (user_override != nullptr) {
    // The user asked Mesa for a driver already: auto is not the place to overrule that.
    c.served = "system";
    c.why = fmt::format("auto: MESA_LOADER_DRIVER_OVERRIDE={} is set in the environment, left as it is", user_override);
  } else if (!device) {
    c.served = "system";
    c.why = "auto: the selected Vulkan device could not be read, so the system GL";
  } else if (is_lavapipe(*device)) {
    // llvmpipe GL cannot give storage to a lavapipe opaque fd (GL_OUT_OF_MEMORY on every
    // rung, Mesa 22.3); zink is GL on the very Vulkan driver that exported it.
    c.served = "zink";
    add_zink(c);
    c.why = fmt::format("auto: the selected Vulkan device {} is Mesa's lavapipe, so zink: GL on that same Vulkan driver",
                        describe(*device));
  } else {
    c.served = "system";
    c.why = fmt::format("auto: the selected Vulkan device {} is not lavapipe, so the system GL", describe(*device));
  }
  if (!c.env.empty() && !vendor_file.empty())
    c.env.emplace_back("__EGL_VENDOR_LIBRARY_FILENAMES", vendor_file);
  std::sort(c.env.begin(), c.env.end());  // by name, as phase A's JSON object keeps them
  return c;
}

std::string mesa_egl_vendor_file() {
  if (std::getenv("__EGL_VENDOR_LIBRARY_FILENAMES") != nullptr) return {};  // the user's pick of vendors stands
  for (const char* path : {"/usr/share/glvnd/egl_vendor.d/50_mesa.json", "/etc/glvnd/egl_vendor.d/50_mesa.json"})
    if (::access(path, R_OK) == 0) return path;
  return {};
}

void apply_gl_driver(const GlDriverChoice& choice) {
  for (const auto& [name, value] : choice.env) ::setenv(name.c_str(), value.c_str(), 1);
}

bool renderer_matches(const GlDriverChoice& choice, std::string_view gl_renderer) {
  if (choice.served == "zink") return gl_renderer.starts_with("zink");
  if (choice.served == "llvmpipe") return gl_renderer.starts_with("llvmpipe");
  return true;
}

}  // namespace extmem::probe
