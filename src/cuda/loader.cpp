#include "cuda/loader.h"

#include <dlfcn.h>

#include <cstdlib>

#include "cuda/symbol_list.h"
#include "extmem/os/library.h"

namespace extmem::cuda {

std::string driver_library_name() {
  const char* over = std::getenv("EXTMEM_CUDA_LIBRARY");
  return over != nullptr && over[0] != '\0' ? over : "libcuda.so.1";
}

const std::vector<const char*>& symbol_names() {
#define EXTMEM_CUDA_NAME(plain, symbol) #symbol,
  static const std::vector<const char*> names = {EXTMEM_CUDA_SYMBOLS(EXTMEM_CUDA_NAME)};
#undef EXTMEM_CUDA_NAME
  return names;
}

Result<std::shared_ptr<DriverLibrary>> DriverLibrary::open(const std::string& name) {
  ::dlerror();
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Error{"dlopen(" + name + ")", ErrorKind::no_driver, "no CUDA driver", why != nullptr ? why : ""};
  }
  std::shared_ptr<DriverLibrary> lib(new DriverLibrary);
  lib->handle_ = handle;
  lib->name_ = name;
  std::string missing;
  std::string first;
  for (const char* sym : symbol_names()) {
    void* p = ::dlsym(handle, sym);
    if (p == nullptr) {
      if (first.empty()) first = sym;
      missing += (missing.empty() ? "" : ", ") + std::string(sym);
    }
    lib->symbols_.push_back(p);
  }
  if (!missing.empty())
    return Error{"dlsym(" + first + ")", ErrorKind::unsupported, "missing symbol", name + " lacks " + missing};
  return lib;
}

DriverLibrary::~DriverLibrary() { os::close_library(handle_); }

}  // namespace extmem::cuda
