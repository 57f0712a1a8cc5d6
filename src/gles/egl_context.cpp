#include "gles/egl_context.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "extmem/os/library.h"

namespace extmem::gles {
namespace {

struct EglFns {
  PFNEGLGETPROCADDRESSPROC get_proc_address = nullptr;
  PFNEGLQUERYSTRINGPROC query_string = nullptr;
  PFNEGLGETERRORPROC get_error = nullptr;
  PFNEGLGETDISPLAYPROC get_display = nullptr;
  PFNEGLGETPLATFORMDISPLAYPROC get_platform_display = nullptr;
  PFNEGLINITIALIZEPROC initialize = nullptr;
  PFNEGLTERMINATEPROC terminate = nullptr;
  PFNEGLBINDAPIPROC bind_api = nullptr;
  PFNEGLCHOOSECONFIGPROC choose_config = nullptr;
  PFNEGLCREATECONTEXTPROC create_context = nullptr;
  PFNEGLDESTROYCONTEXTPROC destroy_context = nullptr;
  PFNEGLMAKECURRENTPROC make_current = nullptr;
  PFNEGLCREATEPBUFFERSURFACEPROC create_pbuffer = nullptr;
  PFNEGLDESTROYSURFACEPROC destroy_surface = nullptr;
  PFNEGLRELEASETHREADPROC release_thread = nullptr;
  PFNEGLQUERYDEVICESEXTPROC query_devices = nullptr;
};

template <typename T>
void sym(void* lib, T& out, const char* name) {
  out = reinterpret_cast<T>(::dlsym(lib, name));
}

bool has_word(const char* list, const char* word) {
  if (list == nullptr) return false;
  const std::size_t n = std::strlen(word);
  for (const char* p = list; (p = std::strstr(p, word)) != nullptr; p += n) {
    bool starts = p == list || p[-1] == ' ';
    bool ends = p[n] == '\0' || p[n] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

std::string hex(const GLubyte* b, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", b[i]);
  return s;
}

Error egl_error(const EglFns& f, std::string step, std::string detail = {}) {
  const EGLint e = f.get_error();
  return coded_error(std::move(step), ErrorKind::driver, CodeSpace::egl_error, e, egl_error_name(e), std::move(detail));
}

}  // namespace

std::string gl_error_name(GLenum e) {
  switch (e) {
    case GL_NO_ERROR: return "GL_NO_ERROR";
    case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
    case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
    case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
    case GL_INVALID_FRAMEBUFFER_OPERATION: return "GL_INVALID_FRAMEBUFFER_OPERATION";
    case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY";
    case GL_CONTEXT_LOST: return "GL_CONTEXT_LOST";
    default: return fmt::format("0x{:04x}", e);
  }
}

std::string egl_error_name(EGLint e) {
  switch (e) {
#define EXTMEM_CASE(x) \
  case x: return #x;
    EXTMEM_CASE(EGL_SUCCESS)
    EXTMEM_CASE(EGL_NOT_INITIALIZED)
    EXTMEM_CASE(EGL_BAD_ACCESS)
    EXTMEM_CASE(EGL_BAD_ALLOC)
    EXTMEM_CASE(EGL_BAD_ATTRIBUTE)
    EXTMEM_CASE(EGL_BAD_CONFIG)
    EXTMEM_CASE(EGL_BAD_CONTEXT)
    EXTMEM_CASE(EGL_BAD_CURRENT_SURFACE)
    EXTMEM_CASE(EGL_BAD_DISPLAY)
    EXTMEM_CASE(EGL_BAD_MATCH)
    EXTMEM_CASE(EGL_BAD_NATIVE_PIXMAP)
    EXTMEM_CASE(EGL_BAD_NATIVE_WINDOW)
    EXTMEM_CASE(EGL_BAD_PARAMETER)
    EXTMEM_CASE(EGL_BAD_SURFACE)
    EXTMEM_CASE(EGL_CONTEXT_LOST)
    EXTMEM_CASE(EGL_BAD_DEVICE_EXT)
#undef EXTMEM_CASE
    default: return fmt::format("0x{:04x}", e);
  }
}

namespace {

// The EGL 1.4 entry points of libEGL (`lib`), and eglQueryDevicesEXT where there is one.
Result<EglFns> load_egl_fns(void* lib) {
  EglFns f;
  sym(lib, f.get_proc_address, "eglGetProcAddress");
  sym(lib, f.query_string, "eglQueryString");
  sym(lib, f.get_error, "eglGetError");
  sym(lib, f.get_display, "eglGetDisplay");
  sym(lib, f.get_platform_display, "eglGetPlatformDisplay");
  sym(lib, f.initialize, "eglInitialize");
  sym(lib, f.terminate, "eglTerminate");
  sym(lib, f.bind_api, "eglBindAPI");
  sym(lib, f.choose_config, "eglChooseConfig");
  sym(lib, f.create_context, "eglCreateContext");
  sym(lib, f.destroy_context, "eglDestroyContext");
  sym(lib, f.make_current, "eglMakeCurrent");
  sym(lib, f.create_pbuffer, "eglCreatePbufferSurface");
  sym(lib, f.destroy_surface, "eglDestroySurface");
  sym(lib, f.release_thread, "eglReleaseThread");
  if (!f.get_proc_address || !f.query_string || !f.get_error || !f.get_display || !f.initialize || !f.terminate ||
      !f.bind_api || !f.choose_config || !f.create_context || !f.destroy_context || !f.make_current ||
      !f.create_pbuffer || !f.destroy_surface || !f.release_thread)
    return Error{"dlsym(libEGL.so.1)", ErrorKind::unsupported, "missing EGL 1.4 entry points", {}};
  f.query_devices = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(f.get_proc_address("eglQueryDevicesEXT"));
  return f;
}

// An initialized display and the platform it came from.
struct OpenDisplay {
  EGLDisplay display = EGL_NO_DISPLAY;
  const char* platform = "";
};

// Display: surfaceless, then device, then default (issue 3 / spec phase A);
// the error says what each try met.
Result<OpenDisplay> open_display(const EglFns& f) {
  const char* client_ext = f.query_string(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  std::string tried;
  OpenDisplay opened;
  auto try_init = [&](EGLDisplay d, const char* name) {
    if (d == EGL_NO_DISPLAY) {
      tried += fmt::format("{}: no display ({}); ", name, egl_error_name(f.get_error()));
      return false;
    }
    EGLint major = 0, minor = 0;
    if (!f.initialize(d, &major, &minor)) {
      tried += fmt::format("{}: eglInitialize -> {}; ", name, egl_error_name(f.get_error()));
      return false;
    }
    opened = OpenDisplay{d, name};
    return true;
  };
  if (f.get_platform_display != nullptr && has_word(client_ext, "EGL_MESA_platform_surfaceless"))
    try_init(f.get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr), "surfaceless");
  if (opened.display == EGL_NO_DISPLAY && f.get_platform_display != nullptr && f.query_devices != nullptr &&
      has_word(client_ext, "EGL_EXT_platform_device")) {
    EGLDeviceEXT devices[16];
    EGLint n = 0;
    if (f.query_devices(16, devices, &n)) {
      for (EGLint i = 0; i < n && opened.display == EGL_NO_DISPLAY; ++i)
        try_init(f.get_platform_display(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr), "device");
    }
  }
  if (opened.display == EGL_NO_DISPLAY) try_init(f.get_display(EGL_DEFAULT_DISPLAY), "default");
  if (opened.display == EGL_NO_DISPLAY)
    return Error{"open an EGL display", ErrorKind::unsupported, "no display", tried};
  return opened;
}

// A config that renders GLES 3 with a pbuffer, or (with
// EGL_KHR_surfaceless_context) with no surface at all.
Result<EGLConfig> choose_gles3_config(const EglFns& f, EGLDisplay display, bool surfaceless) {
  EGLConfig config = nullptr;
  EGLint count = 0;
  const EGLint with_pbuffer[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_NONE};
  const EGLint any_surface[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_SURFACE_TYPE, 0, EGL_NONE};
  if (!f.choose_config(display, with_pbuffer, &config, 1, &count) || count == 0) {
    if (!surfaceless || !f.choose_config(display, any_surface, &config, 1, &count) || count == 0)
      return egl_error(f, "eglChooseConfig(GLES3)", "no config renders GLES 3");
  }
  return config;
}

// The entry points of the extensions the context has (`c`'s list), through
// `load(name)`: a non-null pointer proves nothing, so only where the
// extension is there. glCopyImageSubData under the name this version has.
void load_extension_fns(const EglContext& c, GlFns& gl, const auto& load) {
  if (c.has_extension("GL_EXT_memory_object")) {
#define EXTMEM_LOAD(type, name) gl.name = reinterpret_cast<type>(load(#name));
    EXTMEM_GL_EXT_FUNCS(EXTMEM_LOAD)
#undef EXTMEM_LOAD
    if (!c.has_extension("GL_EXT_memory_object_fd")) gl.glImportMemoryFdEXT = nullptr;
  }
#define EXTMEM_LOAD(type, name) gl.name = reinterpret_cast<type>(load(#name));
  if (c.has_extension("GL_EXT_semaphore_fd")) {
    EXTMEM_GL_SEMAPHORE_FUNCS(EXTMEM_LOAD)
  }
  if (c.has_extension("GL_EXT_buffer_storage")) {
    EXTMEM_GL_BUFFER_STORAGE_FUNCS(EXTMEM_LOAD)
  }
#undef EXTMEM_LOAD
  // glCopyImageSubData is core from GLES 3.2; before that only its extensions' suffixed names.
  int major = 0, minor = 0;
  const bool es32 = std::sscanf(c.gl_version.c_str(), "OpenGL ES %d.%d", &major, &minor) == 2 &&
                    (major > 3 || (major == 3 && minor >= 2));
  const char* name = es32                                   ? "glCopyImageSubData"
                     : c.has_extension("GL_EXT_copy_image") ? "glCopyImageSubDataEXT"
                     : c.has_extension("GL_OES_copy_image") ? "glCopyImageSubDataOES"
                                                            : nullptr;
  if (name != nullptr) {
    gl.glCopyImageSubData = reinterpret_cast<PFNGLCOPYIMAGESUBDATAPROC>(load(name));
    if (gl.glCopyImageSubData != nullptr) gl.copy_image_name = name;
  }
}

}  // namespace

Result<std::unique_ptr<EglContext>> EglContext::create() {
  os::DriverAllocations driver_start_up;  // Mesa's zink leaks a little as it starts (measured)
  std::unique_ptr<EglContext> c(new EglContext());
  c->egl_lib_ = ::dlopen("libEGL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (c->egl_lib_ == nullptr) {
    const char* why = ::dlerror();
    return Error{"dlopen(libEGL.so.1)", ErrorKind::unsupported, why != nullptr ? why : "not found",
                 "no EGL loader (Debian: libegl1)"};
  }
  auto fns = load_egl_fns(c->egl_lib_);
  if (!fns) return std::move(fns).error();
  const EglFns& f = *fns;
  c->make_current_ = f.make_current;
  c->destroy_context_ = f.destroy_context;
  c->destroy_surface_ = f.destroy_surface;
  c->terminate_ = f.terminate;
  c->release_thread_ = f.release_thread;

  auto opened = open_display(f);
  if (!opened) return std::move(opened).error();
  c->display_ = opened->display;
  c->platform = opened->platform;
  c->egl_vendor = f.query_string(c->display_, EGL_VENDOR) ? f.query_string(c->display_, EGL_VENDOR) : "";
  c->egl_version = f.query_string(c->display_, EGL_VERSION) ? f.query_string(c->display_, EGL_VERSION) : "";
  const char* dext = f.query_string(c->display_, EGL_EXTENSIONS);
  c->egl_extensions = dext != nullptr ? dext : "";
  if (!f.bind_api(EGL_OPENGL_ES_API)) return egl_error(f, "eglBindAPI(EGL_OPENGL_ES_API)");

  const bool surfaceless = has_word(dext, "EGL_KHR_surfaceless_context");
  auto config = choose_gles3_config(f, c->display_, surfaceless);
  if (!config) return std::move(config).error();
  for (EGLint minor : {2, 1, 0}) {
    const EGLint attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, minor, EGL_NONE};
    c->context_ = f.create_context(c->display_, *config, EGL_NO_CONTEXT, attribs);
    if (c->context_ != EGL_NO_CONTEXT) break;
  }
  if (c->context_ == EGL_NO_CONTEXT) return egl_error(f, "eglCreateContext(GLES 3.x)");
  if (!surfaceless) {
    const EGLint pb[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
    c->surface_ = f.create_pbuffer(c->display_, *config, pb);
    if (c->surface_ == EGL_NO_SURFACE) return egl_error(f, "eglCreatePbufferSurface(1x1)");
  }
  if (!f.make_current(c->display_, c->surface_, c->surface_, c->context_)) return egl_error(f, "eglMakeCurrent");

  // Core entry points may not be reachable through eglGetProcAddress on every
  // implementation (EGL_KHR_get_all_proc_addresses); fall back to libGLESv2.
  c->gles_lib_ = ::dlopen("libGLESv2.so.2", RTLD_NOW | RTLD_LOCAL);
  auto load = [&](const char* name) -> void* {
    void* p = reinterpret_cast<void*>(f.get_proc_address(name));
    if (p == nullptr && c->gles_lib_ != nullptr) p = ::dlsym(c->gles_lib_, name);
    return p;
  };
#define EXTMEM_LOAD(type, name) c->gl_.name = reinterpret_cast<type>(load(#name));
  EXTMEM_GL_FUNCS(EXTMEM_LOAD)
  EXTMEM_GL_PROGRAM_FUNCS(EXTMEM_LOAD)
  EXTMEM_GL_TEXTURE_FUNCS(EXTMEM_LOAD)
#undef EXTMEM_LOAD
  if (!c->gl_.glGetString || !c->gl_.glGetError || !c->gl_.glGetStringi || !c->gl_.glMapBufferRange)
    return Error{"load GLES 3 entry points", ErrorKind::unsupported, "missing", {}};
  auto str = [&](GLenum e) {
    const GLubyte* s = c->gl_.glGetString(e);
    return s != nullptr ? std::string(reinterpret_cast<const char*>(s)) : std::string();
  };
  c->gl_vendor = str(GL_VENDOR);
  c->gl_renderer = str(GL_RENDERER);
  c->gl_version = str(GL_VERSION);
  GLint n = 0;
  c->gl_.glGetIntegerv(GL_NUM_EXTENSIONS, &n);
  for (GLint i = 0; i < n; ++i) {
    const GLubyte* e = c->gl_.glGetStringi(GL_EXTENSIONS, static_cast<GLuint>(i));
    if (e != nullptr) c->extensions_.emplace_back(reinterpret_cast<const char*>(e));
  }
  load_extension_fns(*c, c->gl_, load);
  c->take_error();
  return c;
}

EglContext::~EglContext() {
  os::DriverAllocations driver_teardown;
  os::pin_loaded_libraries();  // sanitizer builds only: keep vendor libraries mapped for leak reports
  if (display_ != EGL_NO_DISPLAY) {
    make_current_(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (surface_ != EGL_NO_SURFACE) destroy_surface_(display_, surface_);
    if (context_ != EGL_NO_CONTEXT) destroy_context_(display_, context_);
    terminate_(display_);
  }
  if (release_thread_ != nullptr) release_thread_();
  os::close_library(gles_lib_);
  os::close_library(egl_lib_);
}

bool EglContext::has_extension(const std::string& name) const {
  return std::find(extensions_.begin(), extensions_.end(), name) != extensions_.end();
}

std::optional<std::string> EglContext::device_uuid() const {
  if (gl_.glGetUnsignedBytei_vEXT == nullptr) return std::nullopt;
  GLubyte uuid[GL_UUID_SIZE_EXT] = {};
  gl_.glGetUnsignedBytei_vEXT(GL_DEVICE_UUID_EXT, 0, uuid);
  if (take_error() != GL_NO_ERROR) return std::nullopt;
  return hex(uuid, GL_UUID_SIZE_EXT);
}

std::optional<std::string> EglContext::driver_uuid() const {
  if (gl_.glGetUnsignedBytevEXT == nullptr) return std::nullopt;
  GLubyte uuid[GL_UUID_SIZE_EXT] = {};
  gl_.glGetUnsignedBytevEXT(GL_DRIVER_UUID_EXT, uuid);
  if (take_error() != GL_NO_ERROR) return std::nullopt;
  return hex(uuid, GL_UUID_SIZE_EXT);
}

GLenum EglContext::take_error() const {
  GLenum first = GL_NO_ERROR;
  for (int i = 0; i < 16; ++i) {  // bounded: a lost context can return errors forever
    GLenum e = gl_.glGetError();
    if (e == GL_NO_ERROR) break;
    if (first == GL_NO_ERROR) first = e;
  }
  return first;
}

}  // namespace extmem::gles
