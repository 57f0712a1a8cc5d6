// Phase A, EGL/GLES part (docs/probe.md, "Phase A").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::gles {

struct GlesInfo {
  std::string platform;  ///< EGL platform used: "surfaceless", "device" or "default"
  std::string egl_vendor, egl_version;
  std::string gl_vendor, gl_renderer, gl_version;
  std::vector<std::pair<std::string, bool>> extensions;  ///< the GL/EGL extensions the routes use, present or not; sorted by name
  std::string device_uuid;  ///< GL_DEVICE_UUID_EXT (device 0), 32 hex digits; "" when not available
  std::string driver_uuid;  ///< GL_DRIVER_UUID_EXT; "" when not available
};

/// Creates a headless EGL context, describes it and destroys it again.
/// Errors: those of creating the context (unsupported without libEGL.so.1 or a display).
Result<GlesInfo> enumerate();

/// "match", "mismatch" or "not available" for a GL UUID against a Vulkan one.
const char* compare_uuid(const std::string& gl, const std::string& vulkan);

}  // namespace extmem::gles
