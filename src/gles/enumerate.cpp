#include "extmem/gles/enumerate.h"

#include <algorithm>
#include <cstring>

#include "gles/egl_context.h"

namespace extmem::gles {

Result<GlesInfo> enumerate() {
  auto ctx = EglContext::create();
  if (!ctx) return std::move(ctx).error();
  return describe(**ctx);
}

GlesInfo describe(const EglContext& c) {
  GlesInfo info;
  info.platform = c.platform;
  info.egl_vendor = c.egl_vendor;
  info.egl_version = c.egl_version;
  info.gl_vendor = c.gl_vendor;
  info.gl_renderer = c.gl_renderer;
  info.gl_version = c.gl_version;
  for (const char* e : {"GL_EXT_memory_object", "GL_EXT_memory_object_fd", "GL_EXT_semaphore_fd",
                        "GL_EXT_buffer_storage", "GL_EXT_external_buffer", "GL_OES_EGL_image_external",
                        "GL_OES_EGL_image_external_essl3"})
    info.extensions.emplace_back(e, c.has_extension(e));
  const std::string egl_ext = " " + c.egl_extensions + " ";
  info.extensions.emplace_back("EGL_ANDROID_get_native_client_buffer",
                               egl_ext.find(" EGL_ANDROID_get_native_client_buffer ") != std::string::npos);
  std::sort(info.extensions.begin(), info.extensions.end());  // by name, as phase A's JSON object keeps them
  info.device_uuid = c.device_uuid().value_or("");
  info.driver_uuid = c.driver_uuid().value_or("");
  return info;
}

const char* compare_uuid(const std::string& gl, const std::string& vulkan) {
  if (gl.empty() || vulkan.empty()) return "not available";
  return gl == vulkan ? "match" : "mismatch";
}

}  // namespace extmem::gles
