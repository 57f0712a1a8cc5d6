// Private to memtools: the search of a memory-mapped file spread over threads,
// hits still delivered in address order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "extmem/memtools/scanner.h"
#include "memtools/mapping_guard.h"

namespace extmem::memtools::detail {

/// Scans data[0, size) (a read-only file mapping; addresses are offsets) in
/// `chunk`-byte pieces. `workers` threads (0: none, the caller does all) each
/// claim the next piece, search it (for the page-offset form after entering
/// its pages in the page tables in one MADV_POPULATE_READ call, Linux 5.14+;
/// otherwise pages fault in as read), and keep up to `cap` hits; the calling thread hands the pieces' hits to
/// `sink` in address order, and searches on by itself from the last kept hit
/// of a piece that had more than `cap` (so memory stays bounded whatever the
/// data). Workers run at most 2 x workers pieces ahead of delivery. Honours
/// query.max_hits and a sink returning false. Returns false when stopped
/// early; `hits` counts delivered hits, `bytes` the bytes up to the end of the
/// last piece delivered. With `guard` (not owned; the guard of this mapping,
/// nullptr: none) a piece during or after whose search the mapping faulted
/// (the file shrank) is not delivered: the scan stops before it, returns
/// false, and guard->faulted() tells the caller to report the shrink.
bool scan_mapped(const std::uint8_t* data, std::size_t size, const ScanQuery& query, const HitSink& sink,
                 unsigned workers, std::size_t chunk, std::size_t cap, std::uint64_t& hits, std::uint64_t& bytes,
                 const MappingGuard* guard = nullptr);

/// scan_mapped's search of the open file `fd` (`size` bytes, named `path` in
/// errors) without a mapping: each thread preads its piece a few hundred KiB
/// at a time (with the bytes a hit needs on either side) into a buffer that
/// stays in its cache, and searches that. Mapping a page-cached file costs
/// page-table work for every page, entering it and tearing it down, which
/// measured more than the search itself (docs/memtools.md, "Where the scan
/// time went"); a read copies from the page cache at memory speed. Same hits,
/// order, `cap` and stops as scan_mapped. A read error is returned as
/// os_error("pread PATH at OFFSET"); a file found shorter than `size` (it
/// shrank) is file_shrank's error (exit 7), the hits of the pieces before it
/// delivered.
Result<bool> scan_read(int fd, const std::string& path, std::uint64_t size, const ScanQuery& query,
                       const HitSink& sink, unsigned workers, std::size_t chunk, std::size_t cap,
                       std::uint64_t& hits, std::uint64_t& bytes);

}  // namespace extmem::memtools::detail
