// The engine of `extmem diff`: snapshot the words of a set of ranges (a
// process's mappings through /proc/PID/mem, or ranges of a file such as a
// guest RAM image), then compare a later reading against it and list the words
// that changed, grouped by 4 KiB page. Nothing is ever written to the target,
// and the target is not stopped: a word can be torn, and two reads of one
// snapshot are not one instant. docs/memtools.md, "extmem diff".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/ram_map.h"
#include "extmem/os/proc_maps.h"

namespace extmem::memtools {

/// One range snapshotted.
struct DiffRegion {
  std::uint64_t address = 0;  ///< process: first virtual address; file: first GPA (with a ram-map) or file offset
  std::uint64_t size = 0;     ///< bytes, a multiple of the word width
  std::uint64_t file_offset = 0;           ///< file mode: where `address` lies in the file
  std::optional<os::MapEntry> mapping;     ///< process mode: the mapping it is (all of) or lies in
};

/// One word that differs between two snapshots.
struct WordChange {
  std::uint64_t address = 0;  ///< as DiffRegion::address (virtual address, GPA or file offset)
  std::uint64_t old_value = 0, new_value = 0;
};

/// The changes in one 4 KiB page (of the address space DiffRegion::address is in).
struct PageChanges {
  std::uint64_t page = 0;      ///< address of the page's first byte
  std::size_t region = 0;      ///< index into Snapshot::regions()
  std::uint64_t changed = 0;   ///< words of the page that changed
  std::vector<WordChange> words;  ///< the first `max_words_per_page` of them, in address order
};

/// What one comparison found.
struct DiffResult {
  std::vector<PageChanges> pages;  ///< every page with a change, most-changed first, then by address
  std::uint64_t changed_words = 0; ///< over all pages
  std::uint64_t bytes = 0;         ///< bytes compared
  std::vector<std::string> vanished;  ///< process mode: regions that could not be read the second time, with why
};

/// Where a snapshot is taken from.
struct DiffSource {
  pid_t pid = 0;                   ///< process mode when `file` is empty
  std::optional<MapSpec> match;    ///< process mode: only readable mappings matching this (none: every readable one)
  std::string file;                ///< file mode: a regular file or block device
  std::optional<RamMap> ram_map;   ///< file mode: ranges are guest-physical
  /// File mode: (address, size) ranges, addresses as DiffRegion::address;
  /// empty: every range of the ram-map, or the whole file.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  unsigned width = 4;              ///< 1, 2, 4 or 8 bytes; words are aligned to it
  std::uint64_t max_bytes = std::uint64_t{4} << 30;  ///< refuse a snapshot larger than this
};

/// A baseline copy of the source's words, kept in memory (one copy; the
/// second reading is compared as it is read, never stored beside it). Move-only.
class Snapshot {
 public:
  /// Chooses the regions and reads them once. Process mode: the readable
  /// mappings matching `source.match` (a mapping the kernel refuses to read,
  /// EIO as [vvar], is left out and listed in skipped()). File mode: the
  /// ranges, checked to lie in the file (and in the ram-map).
  /// Errors: those of os::read_maps (the process is gone: ENOENT/ESRCH);
  /// os_error("open /proc/PID/mem"|"open FILE"|"mmap FILE") with the OS code;
  /// invalid_argument "select ranges" (nothing to snapshot, a range outside
  /// the ram-map, more than max_bytes: the detail says which; a range past the
  /// end of the file has code kCodePastEnd);
  /// os_error("pread /proc/PID/mem", ESRCH) when the process ends meanwhile.
  static Result<Snapshot> take(const DiffSource& source);

  /// Reads the regions again, compares each word with the baseline and then
  /// makes the new reading the baseline (for the next compare). Keeps at most
  /// `max_words_per_page` changes per page (all are counted). A region that
  /// can no longer be read (the mapping went away) is listed in `vanished`.
  /// Errors: os_error(ESRCH) when the process has ended; os errors of pread.
  Result<DiffResult> compare(std::size_t max_words_per_page);

  const std::vector<DiffRegion>& regions() const noexcept;
  const std::vector<std::string>& skipped() const noexcept;  ///< mappings left out at take(), with why
  std::uint64_t bytes() const noexcept;                      ///< total bytes of the regions
  unsigned width() const noexcept;

  Snapshot(Snapshot&&) noexcept;
  Snapshot& operator=(Snapshot&&) noexcept;
  ~Snapshot();

 private:
  struct State;
  explicit Snapshot(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Compares `size` bytes at `old_bytes` and `new_bytes` (whose first byte has
/// address `base`, a multiple of `width`) word by word and appends the pages
/// with changes to `pages` (in address order; `region` copied into each). The
/// building block of Snapshot::compare, public so it can be tested on buffers.
/// Returns the number of words that changed.
std::uint64_t diff_words(const std::uint8_t* old_bytes, const std::uint8_t* new_bytes, std::size_t size,
                         std::uint64_t base, unsigned width, std::size_t region, std::size_t max_words_per_page,
                         std::vector<PageChanges>& pages);

}  // namespace extmem::memtools
