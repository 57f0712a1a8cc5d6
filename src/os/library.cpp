#include "extmem/os/library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>

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
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void*) -> int {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') ::dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
        return 0;
      },
      nullptr);
#endif
}

}  // namespace extmem::os
