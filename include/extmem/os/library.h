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

}  // namespace extmem::os
