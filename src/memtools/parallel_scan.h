// Private to memtools: the search of a memory-mapped file spread over threads,
// hits still delivered in address order.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace extmem::memtools::detail
