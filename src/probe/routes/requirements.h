// The requirements that routes of several families state (Requirements:
// the extensions and handle types phase A checks before a process starts),
// written once. A route names them as `needs::kFdMemory`.
#pragma once

#include <string_view>

#include <vulkan/vulkan.h>

#include "probe/routes.h"

namespace extmem::probe::needs {

/// Memory shared as a POSIX fd (OPAQUE_FD, and the base of DMA_BUF).
inline constexpr std::string_view kFdMemory[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
/// An fd-shared allocation and fd-shared semaphores (the S1 rows).
inline constexpr std::string_view kFdMemoryAndSemaphores[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
                                                              VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME};
/// Host pointers imported as Vulkan memory (the T3 host rows).
inline constexpr std::string_view kHostMemory[] = {VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME};

inline constexpr HandleNeed kOpaqueFdExportable[] = {{"OPAQUE_FD", HandleFeature::exportable}};
inline constexpr HandleNeed kOpaqueFdImportable[] = {{"OPAQUE_FD", HandleFeature::importable}};
inline constexpr HandleNeed kOpaqueFdBoth[] = {{"OPAQUE_FD", HandleFeature::exportable},
                                               {"OPAQUE_FD", HandleFeature::importable}};
inline constexpr HandleNeed kHostImportable[] = {{"HOST_ALLOCATION", HandleFeature::importable}};

}  // namespace extmem::probe::needs
