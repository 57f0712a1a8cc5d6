// /proc/PID/maps: one mapping per line (proc(5)), parsed into values.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::os {

/// One line of /proc/PID/maps.
struct MapEntry {
  std::uint64_t start = 0;   ///< first address (inclusive)
  std::uint64_t end = 0;     ///< last address + 1 (exclusive)
  std::string perms;         ///< four characters, e.g. "rw-s" (r/w/x, then p private or s shared)
  std::uint64_t offset = 0;  ///< bytes into the mapped file or object
  unsigned dev_major = 0, dev_minor = 0;
  std::uint64_t inode = 0;
  std::string path;          ///< "" for anonymous; "[heap]", "/memfd:name (deleted)", "/dev/nvidiactl", ...

  std::uint64_t size() const { return end - start; }  ///< bytes
  bool shared() const { return perms.size() == 4 && perms[3] == 's'; }
  bool contains(std::uint64_t addr) const { return addr >= start && addr < end; }
};

/// Parses one maps line (without or with its trailing newline). Paths may hold
/// spaces ("/memfd:x (deleted)"). Errors (invalid_argument, step "parse maps
/// line"): the detail names the field and the column where parsing stopped.
Result<MapEntry> parse_maps_line(std::string_view line);

/// Reads and parses /proc/PID/maps (pid 0: this process). Errors:
/// os_error("open /proc/PID/maps") (ENOENT: the process is gone; EACCES: not ours),
/// or the parse error of the first bad line.
Result<std::vector<MapEntry>> read_maps(pid_t pid);

}  // namespace extmem::os
