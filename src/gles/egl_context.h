// A headless EGL context with GLES 3.x, loaded at run time (libEGL.so.1 through glvnd).
#pragma once

#include "extmem/gles/enumerate.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl32.h>
#include <GLES2/gl2ext.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::gles {

#define EXTMEM_GL_FUNCS(X)                                                                          \
  X(PFNGLGETSTRINGPROC, glGetString)                                                                \
  X(PFNGLGETSTRINGIPROC, glGetStringi)                                                              \
  X(PFNGLGETINTEGERVPROC, glGetIntegerv)                                                            \
  X(PFNGLGETERRORPROC, glGetError)                                                                  \
  X(PFNGLGENBUFFERSPROC, glGenBuffers)                                                              \
  X(PFNGLDELETEBUFFERSPROC, glDeleteBuffers)                                                        \
  X(PFNGLBINDBUFFERPROC, glBindBuffer)                                                              \
  X(PFNGLBUFFERDATAPROC, glBufferData)                                                              \
  X(PFNGLGETBUFFERPARAMETERIVPROC, glGetBufferParameteriv)                                          \
  X(PFNGLMAPBUFFERRANGEPROC, glMapBufferRange)                                                      \
  X(PFNGLUNMAPBUFFERPROC, glUnmapBuffer)                                                            \
  X(PFNGLCOPYBUFFERSUBDATAPROC, glCopyBufferSubData)                                                \
  X(PFNGLMEMORYBARRIERPROC, glMemoryBarrier)                                                        \
  X(PFNGLFENCESYNCPROC, glFenceSync)                                                                \
  X(PFNGLCLIENTWAITSYNCPROC, glClientWaitSync)                                                      \
  X(PFNGLDELETESYNCPROC, glDeleteSync)                                                              \
  X(PFNGLFINISHPROC, glFinish)                                                                      \
  X(PFNGLFLUSHPROC, glFlush)                                                                        \
  X(PFNGLBUFFERSUBDATAPROC, glBufferSubData)

// GL_EXT_memory_object / GL_EXT_memory_object_fd, and GL_EXT_disjoint_timer_query
// (the --measure GPU clock): null when the extension is absent.
#define EXTMEM_GL_EXT_FUNCS(X)                                           \
  X(PFNGLCREATEMEMORYOBJECTSEXTPROC, glCreateMemoryObjectsEXT)           \
  X(PFNGLDELETEMEMORYOBJECTSEXTPROC, glDeleteMemoryObjectsEXT)           \
  X(PFNGLMEMORYOBJECTPARAMETERIVEXTPROC, glMemoryObjectParameterivEXT)   \
  X(PFNGLIMPORTMEMORYFDEXTPROC, glImportMemoryFdEXT)                     \
  X(PFNGLBUFFERSTORAGEMEMEXTPROC, glBufferStorageMemEXT)                 \
  X(PFNGLGETUNSIGNEDBYTEVEXTPROC, glGetUnsignedBytevEXT)                 \
  X(PFNGLGETUNSIGNEDBYTEI_VEXTPROC, glGetUnsignedBytei_vEXT)             \
  X(PFNGLGENQUERIESEXTPROC, glGenQueriesEXT)                             \
  X(PFNGLDELETEQUERIESEXTPROC, glDeleteQueriesEXT)                       \
  X(PFNGLBEGINQUERYEXTPROC, glBeginQueryEXT)                             \
  X(PFNGLENDQUERYEXTPROC, glEndQueryEXT)                                 \
  X(PFNGLGETQUERYOBJECTUI64VEXTPROC, glGetQueryObjectui64vEXT)

// GL_EXT_semaphore / GL_EXT_semaphore_fd (S1-gles-semaphore) and GL_EXT_buffer_storage:
// null unless GL_EXT_semaphore_fd (resp. GL_EXT_buffer_storage) is exposed.
#define EXTMEM_GL_SEMAPHORE_FUNCS(X)                           \
  X(PFNGLGENSEMAPHORESEXTPROC, glGenSemaphoresEXT)             \
  X(PFNGLDELETESEMAPHORESEXTPROC, glDeleteSemaphoresEXT)       \
  X(PFNGLIMPORTSEMAPHOREFDEXTPROC, glImportSemaphoreFdEXT)     \
  X(PFNGLWAITSEMAPHOREEXTPROC, glWaitSemaphoreEXT)             \
  X(PFNGLSIGNALSEMAPHOREEXTPROC, glSignalSemaphoreEXT)
#define EXTMEM_GL_BUFFER_STORAGE_FUNCS(X) X(PFNGLBUFFERSTORAGEEXTPROC, glBufferStorageEXT)

// Programs (GLES 2.0 core) and compute dispatch (GLES 3.1 core): --measure's
// shader copy (src/gles/program.h). glDispatchCompute is null on a 3.0 context.
#define EXTMEM_GL_PROGRAM_FUNCS(X)                               \
  X(PFNGLCREATESHADERPROC, glCreateShader)                       \
  X(PFNGLSHADERSOURCEPROC, glShaderSource)                       \
  X(PFNGLCOMPILESHADERPROC, glCompileShader)                     \
  X(PFNGLGETSHADERIVPROC, glGetShaderiv)                         \
  X(PFNGLGETSHADERINFOLOGPROC, glGetShaderInfoLog)               \
  X(PFNGLDELETESHADERPROC, glDeleteShader)                       \
  X(PFNGLCREATEPROGRAMPROC, glCreateProgram)                     \
  X(PFNGLATTACHSHADERPROC, glAttachShader)                       \
  X(PFNGLLINKPROGRAMPROC, glLinkProgram)                         \
  X(PFNGLGETPROGRAMIVPROC, glGetProgramiv)                       \
  X(PFNGLGETPROGRAMINFOLOGPROC, glGetProgramInfoLog)             \
  X(PFNGLDELETEPROGRAMPROC, glDeleteProgram)                     \
  X(PFNGLUSEPROGRAMPROC, glUseProgram)                           \
  X(PFNGLGETUNIFORMLOCATIONPROC, glGetUniformLocation)           \
  X(PFNGLUNIFORM1UIPROC, glUniform1ui)                           \
  X(PFNGLBINDBUFFERBASEPROC, glBindBufferBase)                   \
  X(PFNGLDISPATCHCOMPUTEPROC, glDispatchCompute)

// Textures (GLES 3.0 core): the private textures of the GL image rows' --measure
// copies (src/probe/routes/t4_image/gl_measure.h).
#define EXTMEM_GL_TEXTURE_FUNCS(X)                 \
  X(PFNGLGENTEXTURESPROC, glGenTextures)           \
  X(PFNGLDELETETEXTURESPROC, glDeleteTextures)     \
  X(PFNGLBINDTEXTUREPROC, glBindTexture)           \
  X(PFNGLTEXSTORAGE2DPROC, glTexStorage2D)

#define EXTMEM_GL_DECLARE(type, name) type name = nullptr;

struct GlFns {
  EXTMEM_GL_FUNCS(EXTMEM_GL_DECLARE)
  EXTMEM_GL_PROGRAM_FUNCS(EXTMEM_GL_DECLARE)
  EXTMEM_GL_EXT_FUNCS(EXTMEM_GL_DECLARE)
  EXTMEM_GL_SEMAPHORE_FUNCS(EXTMEM_GL_DECLARE)
  EXTMEM_GL_BUFFER_STORAGE_FUNCS(EXTMEM_GL_DECLARE)
  EXTMEM_GL_TEXTURE_FUNCS(EXTMEM_GL_DECLARE)
  /// GLES 3.2 core glCopyImageSubData, else GL_EXT_copy_image's or
  /// GL_OES_copy_image's suffixed twin (the same signature); null without any.
  PFNGLCOPYIMAGESUBDATAPROC glCopyImageSubData = nullptr;
  /// The name glCopyImageSubData was resolved as ("glCopyImageSubDataEXT", ...); empty when null.
  const char* copy_image_name = "";
};

/// Name of a GL error enum ("GL_OUT_OF_MEMORY"), "0x%04x" when unknown.
std::string gl_error_name(GLenum error);
/// Name of an EGL error ("EGL_BAD_MATCH").
std::string egl_error_name(EGLint error);

/// Owns the EGL display, context and (when needed) a 1x1 pbuffer, current on
/// the creating thread. Destruction releases everything and unloads libEGL.
class EglContext {
 public:
  /// Creates the context: the surfaceless platform (EGL_MESA_platform_surfaceless),
  /// else the device platform (EGL_EXT_platform_device, first device), else the
  /// default display; GLES 3.2, else 3.1, else 3.0. Errors: unsupported when
  /// libEGL.so.1 is missing (step "dlopen(libEGL.so.1)"); driver errors carry
  /// the EGL error name (step "eglInitialize", "eglCreateContext", ...).
  static Result<std::unique_ptr<EglContext>> create();
  ~EglContext();
  EglContext(const EglContext&) = delete;
  EglContext& operator=(const EglContext&) = delete;

  const GlFns& gl() const noexcept { return gl_; }
  bool has_extension(const std::string& name) const;
  const std::vector<std::string>& extensions() const noexcept { return extensions_; }

  std::string platform;       ///< "surfaceless", "device" or "default"
  std::string egl_vendor, egl_version, gl_vendor, gl_renderer, gl_version;
  std::string egl_extensions; ///< display extension string

  /// GL_DEVICE_UUID_EXT of device 0 and GL_DRIVER_UUID_EXT as 32 hex digits;
  /// nullopt without GL_EXT_memory_object (or GL_EXT_semaphore).
  std::optional<std::string> device_uuid() const;
  std::optional<std::string> driver_uuid() const;

  /// Drains glGetError; returns the first error (GL_NO_ERROR when none).
  GLenum take_error() const;

 private:
  EglContext() = default;
  void* egl_lib_ = nullptr;
  void* gles_lib_ = nullptr;
  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  EGLSurface surface_ = EGL_NO_SURFACE;
  GlFns gl_{};
  std::vector<std::string> extensions_;
  // EGL entry points used after creation.
  PFNEGLMAKECURRENTPROC make_current_ = nullptr;
  PFNEGLDESTROYCONTEXTPROC destroy_context_ = nullptr;
  PFNEGLDESTROYSURFACEPROC destroy_surface_ = nullptr;
  PFNEGLTERMINATEPROC terminate_ = nullptr;
  PFNEGLRELEASETHREADPROC release_thread_ = nullptr;
};

/// Phase A's description (extmem/gles/enumerate.h) of a context the caller keeps.
GlesInfo describe(const EglContext& context);

}  // namespace extmem::gles
