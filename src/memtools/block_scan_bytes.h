// Private to memtools: the block searches of block_scan.h over bytes already
// in memory (a mapped file, or a process's mappings copied by
// process_blocks.cpp); offsets in results count from `data`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "extmem/memtools/block_scan.h"
#include "memtools/byte_search.h"
#include "memtools/mapping_guard.h"

namespace extmem::memtools::detail {

/// scan_entropy over data[0, size), on every core; runs in offset order.
/// With `guard` (the mapping's, not owned; nullptr: none), a piece searched
/// while or after the mapping faulted is not delivered: the scan stops
/// (stopped = true) and the caller reports guard->shrank_error().
/// `isa` picks the kernels (the answer is the same on every path).
BlockScanStats scan_entropy_bytes(const std::uint8_t* data, std::size_t size, const EntropyQuery& query,
                                  const EntropySink& sink, const MappingGuard* guard = nullptr,
                                  ScanIsa isa = scan_isa());

/// find_twins over data[0, size): blocks at multiples of query.block from
/// `data`. `guard` as for scan_entropy_bytes: the result is void (the caller
/// reports the shrink) when guard->faulted() afterwards. `isa` picks the hash
/// that groups blocks (the answer is the same on every path).
TwinResult find_twins_bytes(const std::uint8_t* data, std::size_t size, const TwinQuery& query,
                            const MappingGuard* guard = nullptr, ScanIsa isa = scan_isa());

}  // namespace extmem::memtools::detail
