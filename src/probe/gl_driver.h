// --gl-driver: which GL implementation a process that does GL loads. Mesa picks
// its driver from the environment when libEGL is first loaded, so the choice is
// made, and written into the environment, before that, in every process that
// does GL: the warm workers (after their Vulkan device is known, before their
// EGL context), fresh children of --isolate=route, and the parent's own phase A
// under --isolate=route (docs/probe.md, "Which GL serves").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

/// The values --gl-driver accepts, in the words every refusal uses (the public table, probe.h).
inline constexpr const char* kGlDriverAccepts = accepted_words("--gl-driver");

/// True for the names kGlDriverAccepts lists.
bool gl_driver_name_ok(std::string_view name);

/// What `auto` looks at: the selected Vulkan device as VkPhysicalDeviceProperties
/// and VkPhysicalDeviceDriverProperties report it.
struct VulkanDriverFacts {
  std::uint32_t vendor_id = 0;  ///< VkPhysicalDeviceProperties::vendorID
  std::string device_name;      ///< VkPhysicalDeviceProperties::deviceName
  std::string driver_name;      ///< VkPhysicalDeviceDriverProperties::driverName ("" before Vulkan 1.2)
};

/// Mesa's lavapipe: vendor VK_VENDOR_ID_MESA (0x10005) and driverName "llvmpipe"
/// (what lavapipe reports on Mesa 22.3; docs/results/lavapipe-mesa-22.3.md).
bool is_lavapipe(const VulkanDriverFacts& device);

/// The facts of a phase A device.
VulkanDriverFacts facts_of(const vk::DeviceInfo& device);

/// Decides what serves GL for `requested` (one of kGlDriverAccepts' names; the
/// options were validated before). `device`: the selected Vulkan device, absent
/// when it could not be read (then `auto` keeps the system GL and says why).
/// `user_override`: MESA_LOADER_DRIVER_OVERRIDE as this process found it (null
/// when unset): `auto` leaves a user's override alone, an explicit zink or
/// llvmpipe replaces it and says so. `vendor_file`: glvnd's vendor file for
/// Mesa's EGL when it exists ("" when not): zink and llvmpipe name it in
/// __EGL_VENDOR_LIBRARY_FILENAMES so glvnd does not hand EGL to another vendor
/// (NVIDIA's) first. Pure: reads and writes nothing.
GlDriverChoice choose_gl_driver(std::string_view requested, const std::optional<VulkanDriverFacts>& device,
                                const char* user_override, const std::string& vendor_file);

/// Mesa's glvnd EGL vendor file if it is installed, else "" (also "" when
/// __EGL_VENDOR_LIBRARY_FILENAMES is already set: the user's list is kept).
std::string mesa_egl_vendor_file();

/// Writes `choice.env` into this process's environment (setenv, overwriting).
/// Must run before libEGL.so.1 is loaded in the process and while no other
/// thread of it reads the environment (setenv may move the array getenv walks).
void apply_gl_driver(const GlDriverChoice& choice);

/// Whether GL_RENDERER shows the driver `choice` asked for: "zink…" for zink,
/// "llvmpipe…" for llvmpipe; always true for system (nothing was asked).
bool renderer_matches(const GlDriverChoice& choice, std::string_view gl_renderer);

}  // namespace extmem::probe
