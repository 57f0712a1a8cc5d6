// Private to memtools: the page-offset form of `scan FILE --hex --page-offset`
// without a memory mapping. Mapping a page-cached file costs page-table work
// for every page (entering each page, then tearing the mapping down: perf
// showed those two as nearly all of a 4 GiB page-offset scan), while the
// search needs a few bytes of each page; so each piece is read: with few
// threads by preadv, the needle's bytes of every page into their own slot and
// the rest of the page into one small buffer that stays in cache; with many,
// one pread of the needle's bytes per page, as copying whole pages on every
// thread at once is bound by the memory bus (docs/memtools.md, "Where the
// page-offset time went").
#pragma once

#include <cstdint>

#include "extmem/memtools/scanner.h"

namespace extmem::memtools::detail {

/// True when `query` is a page-offset search this reader can do: a byte
/// pattern at a page offset, pattern and offset within one page, a page size
/// of at most 64 KiB.
bool page_offset_readable(const ScanQuery& query);

/// Searches `size` bytes of the open file `fd` (a regular file or block
/// device) for `query` (page_offset_readable) with `workers` threads besides
/// the caller, in 16 MiB pieces, handing hits to `sink` in offset order. With
/// workers, each piece is read through a descriptor of its own (reopened from
/// /proc/self/fd; `fd` itself when that fails). The environment variable
/// EXTMEM_PAGE_OFFSET_READ=copy|each forces the preadv or the pread-per-page
/// read (for benchmarks); otherwise 4 or more threads in all read each page.
/// (=map is scan_file's: it keeps such a query on the memory-mapped form.)
/// Honours max_hits and a sink returning false. Returns false when stopped
/// early; `hits` counts delivered hits, `bytes` the bytes up to the end of the
/// last piece delivered. A read error ends the piece where it happened and is
/// returned as an os_error("preadv PATH at OFFSET") (or "pread PATH at
/// OFFSET") with the OS code; a file found shorter than `size` (it shrank
/// while it was read) is file_shrank's error (code kCodePastEnd, exit 7), the
/// hits of the pieces before it delivered. `bytes` counts a piece once it has
/// been read whole, even when --max stops among its hits.
Result<bool> scan_page_offsets(int fd, const std::string& path, std::uint64_t size, const ScanQuery& query,
                               const HitSink& sink, unsigned workers, std::uint64_t& hits, std::uint64_t& bytes);

}  // namespace extmem::memtools::detail
