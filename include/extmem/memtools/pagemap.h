// /proc/PID/pagemap (Documentation/admin-guide/mm/pagemap.rst): one 64-bit
// entry per virtual page, decoded, with the PFN marked hidden rather than shown
// as 0 when the reader lacks CAP_SYS_ADMIN.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::memtools {

/// Bytes per page of this machine (sysconf(_SC_PAGESIZE)).
std::uint64_t page_size() noexcept;

/// Whether this process has CAP_SYS_ADMIN in its effective set (capget). The
/// kernel shows PFNs and swap offsets in pagemap only to openers that have it.
bool has_cap_sys_admin() noexcept;

/// One decoded pagemap entry.
struct PageEntry {
  std::uint64_t raw = 0;          ///< the entry as read
  bool present = false;           ///< bit 63: the page is in RAM
  bool swapped = false;           ///< bit 62: the page is in swap
  bool file_or_shared = false;    ///< bit 61: file page or shared anonymous page
  bool guard = false;             ///< bit 58: guard region (kernel 6.15+)
  bool uffd_wp = false;           ///< bit 57: write-protected by userfaultfd
  bool exclusive = false;         ///< bit 56: mapped by exactly one process (4.2+)
  bool soft_dirty = false;        ///< bit 55: written since soft-dirty was last cleared
  /// True when the kernel withheld the frame number (or swap location): the
  /// reader lacked CAP_SYS_ADMIN, or a present page came back with PFN 0,
  /// which the kernel uses for "not shown". Never a real frame 0.
  bool pfn_hidden = false;
  std::optional<std::uint64_t> pfn;          ///< page frame number: present and not hidden
  std::optional<std::uint64_t> swap_type;    ///< swap file index: swapped and not hidden
  std::optional<std::uint64_t> swap_offset;  ///< page index in that swap file: swapped and not hidden
};

/// Decodes `raw`. `pfn_visible` says whether the opener had CAP_SYS_ADMIN;
/// when false, bits 0-54 are not interpreted at all.
PageEntry decode_pagemap_entry(std::uint64_t raw, bool pfn_visible) noexcept;

/// Flags of an entry as words, e.g. "present exclusive file/shared soft-dirty";
/// "not-present" for an empty entry.
std::string describe_flags(const PageEntry& entry);

/// An open /proc/PID/pagemap. Move-only; owns its fd.
class PagemapReader {
 public:
  /// Opens /proc/PID/pagemap (pid 0: this process) read-only and records
  /// whether PFNs will be visible (has_cap_sys_admin()). Errors:
  /// os_error("open /proc/PID/pagemap") — ENOENT: no such process; EACCES/EPERM: not allowed.
  static Result<PagemapReader> open(pid_t pid);

  /// Entries for `count` pages starting at the page holding `address` (bytes;
  /// rounded down to a page). Fewer entries than asked come back when the range
  /// runs past the end of the user address space (e.g. [vsyscall]).
  /// Errors: os_error("pread /proc/PID/pagemap"); ESRCH when the process ended.
  Result<std::vector<PageEntry>> read(std::uint64_t address, std::uint64_t count) const;

  /// Whether the opener may see PFNs (see has_cap_sys_admin()).
  bool pfn_visible() const noexcept { return pfn_visible_; }
  pid_t pid() const noexcept { return pid_; }

 private:
  os::UniqueFd fd_;
  pid_t pid_ = 0;
  bool pfn_visible_ = false;
};

/// Consecutive pages with the same flags whose frame numbers (or swap offsets)
/// follow each other; how `maps --pagemap` folds a mapping into a few lines.
struct PageRun {
  std::uint64_t start = 0;  ///< first virtual address (bytes)
  std::uint64_t pages = 0;  ///< number of pages
  PageEntry first;          ///< entry of the first page; later pages have pfn/swap_offset + i
};

/// Whether `next`, the entry of the page right after `run`, extends it.
bool continues_run(const PageRun& run, const PageEntry& next) noexcept;

/// Folds `entries` (of pages starting at `start`, consecutive) into runs.
std::vector<PageRun> fold_pages(std::uint64_t start, const std::vector<PageEntry>& entries);

/// Result of translating one virtual address of a process.
struct Translation {
  std::uint64_t address = 0;                 ///< the virtual address asked about
  PageEntry page;                            ///< its page's entry
  std::optional<std::uint64_t> physical;     ///< pfn * page size + page offset, when the PFN is known
};

/// Translates `address` of process `pid` through its pagemap (no check that the
/// address is mapped; see read_maps). Errors: those of PagemapReader.
Result<Translation> translate(const PagemapReader& reader, std::uint64_t address);

}  // namespace extmem::memtools
