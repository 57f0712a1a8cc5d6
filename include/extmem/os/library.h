// Closing dlopen()ed driver libraries.
#pragma once

namespace extmem::os {

/// dlclose(handle), except in AddressSanitizer builds: there the driver stays
/// mapped so LeakSanitizer can name the library of a leak inside it (an
/// unloaded library shows as "<unknown module>" and cannot be suppressed).
void close_library(void* handle) noexcept;

/// In AddressSanitizer builds, takes one more reference on every library now
/// loaded, so drivers that a loader unloads later (an ICD at vkDestroyInstance,
/// a vendor library at eglTerminate) stay mapped for LeakSanitizer's report.
/// Does nothing in other builds.
void pin_loaded_libraries() noexcept;

/// While alive, in sanitizer builds, LeakSanitizer ignores the allocations this thread
/// makes (__lsan_disable / __lsan_enable): for a vendor driver's start-up and teardown,
/// whose internal allocations the process cannot free (Mesa 22.3's zink leaves about
/// 100 bytes unreachable once it has started: measured under ASan). Our own allocations
/// outside the scope are still checked. No effect in other builds.
class DriverAllocations {
 public:
  DriverAllocations() noexcept;
  ~DriverAllocations();
  DriverAllocations(const DriverAllocations&) = delete;
  DriverAllocations& operator=(const DriverAllocations&) = delete;
};

}  // namespace extmem::os
