// Mapping classes for `extmem watch --classes`: what kind of object each line
// of /proc/PID/maps maps, so a leak of "one 4 KiB memfd per descriptor set" or
// of GPU device mappings shows up as one growing class.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/os/proc_maps.h"

namespace extmem::watch {

/// The class of one mapping, from its path (a " (deleted)" suffix ignored):
///   "anon"             no path, or "/dev/zero" (shared anonymous memory)
///   "anon:NAME"        "[anon:NAME]" (named with PR_SET_VMA_ANON_NAME); "anon_shmem:NAME" likewise
///   "heap", "stack"    "[heap]", "[stack]" and "[stack:TID]"
///   "vdso"             "[vdso]", "[vvar]", "[vvar_vclock]", "[vsyscall]"
///   "memfd:NAME"       "/memfd:NAME" (one class per memfd name)
///   "dmabuf"           "/dmabuf:…" or "anon_inode:dmabuf"
///   "shm"              a POSIX shared memory object under /dev/shm/, "sysv-shm" for "/SYSV…"
///   "/dev/…"           any other path under /dev/: the device node itself
///                      ("/dev/dri/renderD128", "/dev/nvidia0", "/dev/kgsl-3d0", "/dev/mali0")
///   "anon_inode:NAME"  another anonymous inode ("anon_inode:i915.gem", "anon_inode:[io_uring]")
///   "file"             any other absolute path
///   "[NAME]"           any other bracketed kernel name, kept as printed
///   "other"            anything else
std::string mapping_class(std::string_view path);

/// Mapping count of one process, in total and per class.
struct MapCensus {
  std::uint64_t total = 0;  ///< lines of the maps text (mappings)
  /// (class, mapping count) sorted by class name; classes with no mapping are absent.
  std::vector<std::pair<std::string, std::uint64_t>> classes;
};

/// Classifies every line of a maps text with os::parse_maps_line and
/// mapping_class. A line the parser refuses counts under the class
/// "unparsed" (the kernel's format is not ours to reject mid-run).
MapCensus census_of(std::string_view maps_text);

}  // namespace extmem::watch
