// The search engine of `extmem scan`: a file (memory-mapped, read front to
// back with MADV_SEQUENTIAL) or a process's memory (/proc/PID/maps +
// /proc/PID/mem, no ptrace), searched for a byte pattern, an integer value or
// a record; hits are handed to a callback as they are found. docs/memtools.md, "`extmem scan`".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/scan_query.h"
#include "extmem/os/proc_maps.h"

namespace extmem::memtools {

/// What to look for.
struct ScanQuery {
  enum class Kind {
    bytes,   ///< `pattern` at any byte position (or only at `page_offset` within each page)
    value,   ///< `value` as a `width`-byte integer in `order`, at a multiple of `width`
    record,  ///< `record`'s anchor at a multiple of its width, every constraint holding
  };
  Kind kind = Kind::bytes;
  std::vector<std::uint8_t> pattern;       ///< bytes: 1 to 4096 bytes
  std::optional<std::uint64_t> page_offset;  ///< bytes: only at this offset within each page (< page_size)
  std::uint64_t page_size = 4096;          ///< bytes, a power of two
  std::uint64_t value = 0;                 ///< value: fits in `width`
  unsigned width = 4;                      ///< value: 1, 2, 4 or 8 bytes
  ByteOrder order = ByteOrder::little;     ///< value
  unsigned context = 0;                    ///< value: words of `width` shown on each side of a hit (<= 64)
  std::optional<RecordTemplate> record;    ///< record
  std::uint64_t max_hits = 0;              ///< stop after this many hits; 0 = no limit

  /// The bytes searched for (pattern, encoded value, or the record's anchor).
  std::vector<std::uint8_t> needle() const;
  /// Alignment of a hit's address, bytes (1 for a pattern).
  std::uint64_t alignment() const;
};

/// One hit.
struct ScanHit {
  /// File offset (file scan) or virtual address (process scan) of the hit's
  /// first byte; for a record, of the anchor field's first byte.
  std::uint64_t address = 0;
  /// value: the one value; record: each field's value in template order.
  std::vector<std::uint64_t> fields;
  /// value with context N: the N words before the hit (farthest first) and the
  /// N after it; nullopt where a word lies outside the data (file start or end,
  /// mapping edge).
  std::vector<std::optional<std::uint64_t>> before, after;
  /// Process scan: the mapping holding the hit (valid during the callback only).
  const os::MapEntry* mapping = nullptr;
};

/// Receives each hit in address order as it is found; returns false to stop the scan.
using HitSink = std::function<bool(const ScanHit&)>;

/// What a scan covered.
struct ScanStats {
  std::uint64_t bytes = 0;       ///< bytes searched (when stopped: to the end of the 16 MiB or 1 MiB chunk it stopped in)
  std::uint64_t hits = 0;        ///< hits delivered
  bool stopped = false;          ///< stopped early: max_hits reached or the sink said stop
  std::vector<std::string> skipped;  ///< process scan: mappings that could not be read, with why
};

/// Scans all of file `path` (regular file or block device), mmap()ed read-only
/// with MADV_SEQUENTIAL, in 16 MiB pieces searched by up to 7 threads besides
/// the calling one (one fewer than the cores); the calling thread hands hits
/// to `sink` in address order. The page-offset form of a byte pattern that
/// fits in its page (pages up to 64 KiB) is not mapped: it reads each page's
/// few bytes with preadv, which skips the page-table work a mapping costs.
/// Errors: os_error("open PATH"|"fstat PATH"|"mmap PATH"|"preadv PATH at
/// OFFSET"); invalid_argument for another kind of file. An empty file has no hits.
Result<ScanStats> scan_file(const std::string& path, const ScanQuery& query, const HitSink& sink);

/// Scans every readable mapping of process `pid` (that matches `match`, when
/// not null; borrowed) through /proc/PID/mem (pread
/// in 1 MiB chunks, hits across chunk borders included). A mapping that cannot
/// be read (EIO: e.g. [vvar], a device mapping) is listed in `skipped` and
/// the scan goes on. Errors: those of os::read_maps, os_error("open
/// /proc/PID/mem") (ENOENT: no such process; EACCES/EPERM: not allowed),
/// os_error(ESRCH) when the process ends during the scan.
Result<ScanStats> scan_process(pid_t pid, const ScanQuery& query, const HitSink& sink,
                               const MapSpec* match = nullptr);

/// Scans the bytes `data[0, size)`, whose first byte has address `base`,
/// reporting hits whose first byte lies in [lo, hi) (offsets into data);
/// bytes outside [lo, hi) serve only to complete a needle, a record or the
/// context. The building block of scan_file and scan_process, public so it can
/// be tested on buffers. Returns false when the sink (or max_hits) stopped it;
/// `hits` counts delivered hits across calls.
bool scan_buffer(const std::uint8_t* data, std::size_t size, std::uint64_t base, std::size_t lo, std::size_t hi,
                 const ScanQuery& query, const HitSink& sink, std::uint64_t& hits,
                 const os::MapEntry* mapping = nullptr);

}  // namespace extmem::memtools
