#include "extmem/os/library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <new>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define EXTMEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EXTMEM_ASAN 1
#endif
#endif

#ifdef EXTMEM_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace extmem::os {

#ifdef EXTMEM_ASAN
DriverAllocations::DriverAllocations() noexcept { __lsan_disable(); }
DriverAllocations::~DriverAllocations() { __lsan_enable(); }
#else
DriverAllocations::DriverAllocations() noexcept = default;
DriverAllocations::~DriverAllocations() = default;
#endif

void close_library(void* handle) noexcept {
#ifndef EXTMEM_ASAN
  if (handle != nullptr) ::dlclose(handle);
#else
  (void)handle;
#endif
}

void pin_loaded_libraries() noexcept {
#ifdef EXTMEM_ASAN
  // The names are copied first and opened after: dl_iterate_phdr holds the loader's
  // list lock while it calls back, and dlopen there takes the load lock, the reverse
  // of dlclose's order, so another thread's dlclose (an EGL vendor's start-up
  // beside vkDestroyInstance in phase A) deadlocked both (seen on Debian 13's glibc).
  std::vector<std::string> names;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) -> int {
        if (info->dlpi_name == nullptr || info->dlpi_name[0] != '/') return 0;
        try {
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
          return 0;
        } catch (const std::bad_alloc&) {
          return 1;  // no exception crosses the loader; pinning only helps leak reports
        }
      },
      &names);
  for (const std::string& name : names) ::dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD);
#endif
}

}  // namespace extmem::os
