// Block-wise searches of a file (a RAM image) for `extmem scan`: blocks whose
// byte entropy reaches a threshold (a hash or key array), and blocks with
// identical content at different offsets ("twins": copies of one buffer).
// The file is memory-mapped read-only and searched by every core; results are
// in file-offset order. A process's mappings (through /proc/PID/mem, the
// process not stopped) are copied first, then searched the same way, results
// at virtual addresses. docs/memtools.md, "extmem scan".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// --entropy=BITS[/BLOCK].
struct EntropyQuery {
  double bits = 4.5;        ///< Shannon entropy of a block's bytes, bits per byte, at least this (0 < bits <= 8)
  std::size_t block = 32;   ///< bytes per block, 8 to 65536; blocks start at multiples of it
};

/// Parses "BITS" or "BITS/BLOCK" (BITS a decimal number such as 4.5, BLOCK a
/// size with optional K). BITS must be reachable: at most log2(min(BLOCK, 256))
/// (a 32-byte block holds at most 5 bits per byte). Errors: invalid_argument,
/// step "parse entropy"; `syntax` points at the bad character.
Result<EntropyQuery> parse_entropy(std::string_view text, SyntaxError* syntax = nullptr);

/// Shannon entropy of `size` bytes (> 0), bits per byte: 0 for a constant
/// block, log2(size) at most (8 for 256 or more bytes).
double byte_entropy(const std::uint8_t* data, std::size_t size);

/// A run of consecutive blocks that each pass the threshold.
struct EntropyRun {
  std::uint64_t offset = 0;  ///< file offset of the first block
  std::uint64_t bytes = 0;   ///< a multiple of the block size
  double min_bits = 0, max_bits = 0;  ///< lowest and highest block entropy in the run
};

/// Receives each run in offset order; returns false to stop.
using EntropySink = std::function<bool(const EntropyRun&)>;

/// What a block search covered.
struct BlockScanStats {
  std::uint64_t bytes = 0;    ///< bytes searched
  bool stopped = false;       ///< ended early (the sink, or --max)
  std::vector<std::string> skipped;  ///< process form: mappings that could not be read ("MAPPING: ERRNO")
};

/// Searches all of `path` for runs of high-entropy blocks (a partial block
/// at the end is not looked at). Errors: os_error("open PATH"|"fstat PATH"|
/// "mmap PATH"); invalid_argument for a file that is not regular or a block device.
Result<BlockScanStats> scan_entropy(const std::string& path, const EntropyQuery& query, const EntropySink& sink);

/// --twins.
struct TwinQuery {
  std::size_t block = 4096;         ///< bytes per block (a power of two, 64 to 1G); blocks at multiples of it
  std::uint64_t max_distinct = 0;   ///< stop after this many distinct contents are held (memory bound); 0: none
};

/// Blocks with one content, at two or more offsets.
struct TwinGroup {
  std::uint64_t hash = 0;              ///< 64-bit hash of the content (equality is checked byte for byte)
  std::vector<std::uint64_t> offsets;  ///< file offsets, increasing; at least two
};

/// What a twin search found.
struct TwinResult {
  std::vector<TwinGroup> groups;      ///< largest first, then by first offset
  std::uint64_t blocks = 0;           ///< blocks looked at
  std::uint64_t constant_blocks = 0;  ///< left out: every byte the same (zero pages included)
  std::uint64_t distinct = 0;         ///< distinct contents among the others
  std::uint64_t bytes = 0;            ///< bytes searched (to where it stopped)
  bool stopped = false;               ///< max_distinct reached
  std::vector<std::string> skipped;   ///< process form: mappings that could not be read ("MAPPING: ERRNO")
};

/// Finds twin blocks in all of `path`: zero and other constant blocks are
/// left out; memory grows with the number of distinct blocks (bounded by
/// max_distinct). Errors as scan_entropy.
Result<TwinResult> find_twins(const std::string& path, const TwinQuery& query);

/// The most bytes of mappings the process forms copy (4 GiB).
inline constexpr std::uint64_t kMaxProcessBlockBytes = std::uint64_t{4} << 30;

/// scan_entropy over the readable mappings of process `pid` that `match`
/// selects (null: all), each searched on its own (a run never spans two
/// mappings); EntropyRun::offset is a virtual address. The mappings are first
/// copied through /proc/PID/mem into memory this call owns and frees (at most
/// kMaxProcessBlockBytes); a partial block at a mapping's end is not looked
/// at; a mapping the kernel will not read is listed in `skipped`. Errors:
/// os_error("read /proc/PID/maps"...) as read_live_maps; os_error("open
/// /proc/PID/mem", errno) (EACCES/EPERM: not allowed); os_error("pread
/// /proc/PID/mem", ESRCH) when the process ends meanwhile; invalid_argument
/// "copy mappings" when more than the bound is selected. No readable mapping
/// selected (none matches, or none holds a whole block) is no error: nothing
/// is searched and `bytes` is 0.
Result<BlockScanStats> scan_entropy_process(pid_t pid, const MapSpec* match, const EntropyQuery& query,
                                            const EntropySink& sink);

/// find_twins over the selected mappings of process `pid` (copied as for
/// scan_entropy_process; blocks at multiples of query.block from each
/// mapping's start, never across two): offsets are virtual addresses. Errors
/// as scan_entropy_process.
Result<TwinResult> find_twins_process(pid_t pid, const MapSpec* match, const TwinQuery& query);

}  // namespace extmem::memtools
