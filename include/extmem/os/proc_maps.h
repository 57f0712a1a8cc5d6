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

/// /proc/PID/maps read a piece at a time. When the process ends while its
/// maps are read, the kernel simply ends the file early, which reads like a
/// short list; this reader turns that into an error instead. Owns its fds; move-only.
class MapsReader {
 public:
  /// Opens /proc/PID (pid 0: this process) and its maps. Errors:
  /// os_error("open /proc/PID/maps") (ENOENT: no such process; EACCES: not ours).
  static Result<MapsReader> open(pid_t pid);

  /// Reads the next piece (at most 64 KiB of text) and appends the entries of
  /// its complete lines to `out`. Returns true while more remain, false once
  /// the whole list has been read. Errors: os_error("read /proc/PID/maps");
  /// the parse error of a bad line; os_error("read /proc/PID/maps", ESRCH)
  /// when the process had ended by the end of the file (the list may be cut
  /// short: it is not returned as complete).
  Result<bool> next(std::vector<MapEntry>& out);

 private:
  int dir_ = -1;  // /proc/PID, to ask after the same process at the end (not a reused pid)
  int fd_ = -1;   // its maps
  std::string name_, pending_;

 public:
  MapsReader(MapsReader&& other) noexcept;
  MapsReader& operator=(MapsReader&& other) noexcept;
  MapsReader(const MapsReader&) = delete;
  MapsReader& operator=(const MapsReader&) = delete;
  ~MapsReader();
  MapsReader() = default;
};

/// Reads and parses /proc/PID/maps (pid 0: this process) with MapsReader.
/// Errors: those of MapsReader: ENOENT when the process is gone, EACCES when
/// not ours, ESRCH when it ended during the read, or the parse error of the
/// first bad line.
Result<std::vector<MapEntry>> read_maps(pid_t pid);

}  // namespace extmem::os
