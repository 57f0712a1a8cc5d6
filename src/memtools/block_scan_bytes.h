// Private to memtools: the block searches of block_scan.h over bytes already
// in memory (a mapped file, or a process's mappings copied by
// process_blocks.cpp); offsets in results count from `data`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "extmem/memtools/block_scan.h"

namespace extmem::memtools::detail {

/// scan_entropy over data[0, size), on every core; runs in offset order.
BlockScanStats scan_entropy_bytes(const std::uint8_t* data, std::size_t size, const EntropyQuery& query,
                                  const EntropySink& sink);

/// find_twins over data[0, size): blocks at multiples of query.block from `data`.
TwinResult find_twins_bytes(const std::uint8_t* data, std::size_t size, const TwinQuery& query);

}  // namespace extmem::memtools::detail
