// T1-cuda-vmm-multichunk's layout (docs/probe.md, "T1-cuda-vmm-multichunk"):
// one virtual range backed by several cuMemCreate chunks of different sizes,
// each a multiple of the allocation granularity, and the windows either side
// of every chunk boundary the route checks. Pure arithmetic, unit-tested
// (tests/cuda_chunks_tests.cpp), no CUDA.
#pragma once

#include <cstddef>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::probe::chunks {

/// How many chunks the route backs its range with: three, so there are two
/// boundaries and a chunk that is neither first nor last.
inline constexpr std::size_t kChunkCount = 3;

/// Bytes checked on each side of a boundary: the last kBoundaryHalf bytes of
/// one chunk and the first kBoundaryHalf of the next (together one 4 KiB
/// region, the size of the routes' staging buffer).
inline constexpr std::size_t kBoundaryHalf = 2048;

/// The chunks of one range, in address order.
struct Plan {
  std::vector<std::size_t> sizes;    ///< bytes of chunk i, a multiple of the granularity
  std::vector<std::size_t> offsets;  ///< bytes from the range's start to chunk i (offsets[0] == 0)
  std::size_t total = 0;             ///< the range's size in bytes: the sum of sizes
};

/// Chunk sizes 1u, 2u, ..., count*u, where the unit u is the smallest multiple
/// of `granularity` (bytes, from cuMemGetAllocationGranularity) for which the
/// range holds at least `want` bytes (the layout size): different sizes, so a
/// peer that assumes equal chunks maps the wrong bytes. Errors (kind
/// invalid_argument, step "plan the chunks"): granularity or count 0, or a
/// total that overflows size_t.
Result<Plan> plan(std::size_t want, std::size_t granularity, std::size_t count = kChunkCount);

/// The plan a peer announced (`sizes`, bytes, in address order), checked: at
/// least one chunk, every size a non-zero multiple of `granularity`, a total of
/// at least `want` bytes without overflow. Errors (invalid_argument, step
/// "check the announced chunks") say which rule failed.
Result<Plan> from_sizes(const std::vector<std::size_t>& sizes, std::size_t granularity, std::size_t want);

/// One boundary's window: [start, start + 2 * kBoundaryHalf), the boundary at start + kBoundaryHalf.
struct Window {
  std::size_t boundary = 0;  ///< index i >= 1: between chunk i-1 and chunk i
  std::size_t start = 0;     ///< bytes from the range's start
  std::size_t length = 0;    ///< bytes (2 * kBoundaryHalf)
};

/// The window of every boundary of `p` (chunk sizes must be at least kBoundaryHalf, which a
/// granularity multiple always is on a GPU: 2 MiB on the H200, docs/results/nvidia-h200-580.md).
std::vector<Window> windows(const Plan& p);

/// Index of the chunk holding byte `offset` of the range (p.sizes.size() when past its end).
std::size_t chunk_of(const Plan& p, std::size_t offset);

}  // namespace extmem::probe::chunks
