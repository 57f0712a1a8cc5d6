// The GL side of the T4 image rows' GL importer: the GL entry points only
// these rows use, the imported texture with its framebuffer, and the import
// ladder (glImportMemoryFdEXT + glTexStorageMem2DEXT, each phrasing a driver
// may want). docs/probe.md, "T4 image rows".
#pragma once


#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "gles/egl_context.h"
#include "probe/route_report.h"
#include "probe/worker/child_context.h"
#include "probe/worker/setup_info.h"

namespace extmem::probe::image {

// The GL entry points only these rows use, resolved here (eglGetProcAddress,
// then libGLESv2) so the shared GL table stays as it is.
struct TexFns {
  PFNGLGENTEXTURESPROC glGenTextures = nullptr;
  PFNGLDELETETEXTURESPROC glDeleteTextures = nullptr;
  PFNGLBINDTEXTUREPROC glBindTexture = nullptr;
  PFNGLTEXPARAMETERIPROC glTexParameteri = nullptr;
  PFNGLGENFRAMEBUFFERSPROC glGenFramebuffers = nullptr;
  PFNGLDELETEFRAMEBUFFERSPROC glDeleteFramebuffers = nullptr;
  PFNGLBINDFRAMEBUFFERPROC glBindFramebuffer = nullptr;
  PFNGLFRAMEBUFFERTEXTURE2DPROC glFramebufferTexture2D = nullptr;
  PFNGLCHECKFRAMEBUFFERSTATUSPROC glCheckFramebufferStatus = nullptr;
  PFNGLREADPIXELSPROC glReadPixels = nullptr;
  PFNGLENABLEPROC glEnable = nullptr;
  PFNGLDISABLEPROC glDisable = nullptr;
  PFNGLSCISSORPROC glScissor = nullptr;
  PFNGLCLEARCOLORPROC glClearColor = nullptr;
  PFNGLCLEARPROC glClear = nullptr;
  PFNGLTEXSTORAGEMEM2DEXTPROC glTexStorageMem2DEXT = nullptr;
  PFNGLVIEWPORTPROC glViewport = nullptr;
  PFNGLDRAWARRAYSPROC glDrawArrays = nullptr;

  // The first entry point that did not resolve, or empty.
  std::string missing;
};


/// Resolves every TexFns entry point; `missing` names the first that did not resolve.
TexFns load_tex_fns();

// The imported texture, its memory object and the framebuffer reading and
// clearing it. Deletes the framebuffer, the texture, then the memory object.
struct GlTexture {
  const gles::EglContext* ctx = nullptr;
  const TexFns* fn = nullptr;
  GLuint memory = 0, texture = 0, fbo = 0;
  GlTexture() = default;
  GlTexture(const GlTexture&) = delete;
  GlTexture& operator=(const GlTexture&) = delete;
  ~GlTexture() {
    if (ctx == nullptr) return;
    if (fbo != 0) fn->glDeleteFramebuffers(1, &fbo);
    if (texture != 0) fn->glDeleteTextures(1, &texture);
    if (memory != 0) ctx->gl().glDeleteMemoryObjectsEXT(1, &memory);
    (void)ctx->take_error();
  }
};
// One phrasing of the import (docs/probe.md, "T1-gles": drivers differ in what they accept).
struct TexRung {
  bool dedicated = false;
  std::uint64_t import_size = 0;  // bytes given to glImportMemoryFdEXT
  std::string import_from;        // "allocation" (the exporter's allocationSize) or "fd" (the fd's own size)
  std::string label() const {
    return fmt::format("dedicated={} import={}({})", dedicated ? "on" : "off", import_from, import_size);
  }
};

/// Imports `fd` (borrowed; each attempt imports a dup) as a width x height
/// GL_RGBA8 OPTIMAL texture with a complete framebuffer, trying the exporter's
/// dedicated choice first, then the other, each with the exporter's allocation
/// size, then the fd's own size where it has one (`info`). The accepted rung and
/// the refusals go into rep.detail. Returns false when every rung was refused:
/// the leg then fails at the ladder with the last refusal (the extensions are
/// exposed and the UUIDs match, so that is the driver's FAIL).
bool import_texture(ChildContext& ctx, const gles::EglContext& egl, const TexFns& f, int fd,
                    const peer::SetupInfo& info, std::uint32_t width, std::uint32_t height, GlTexture& tex,
                    RouteReport& rep, Leg& leg);

}  // namespace extmem::probe::image
