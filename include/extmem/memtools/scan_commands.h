// The `scan` and `walk` commands as library calls: parsed options in, lines on
// the given streams, an exit code out (the codes of commands.h). The
// command-line file only parses options. docs/memtools.md shows the output.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "extmem/memtools/block_scan.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/ram_map.h"
#include "extmem/memtools/scanner.h"
#include "extmem/memtools/walk_format.h"

namespace extmem::memtools {

/// `extmem scan`.
struct ScanOptions {
  std::string file;               ///< file mode when not empty
  pid_t pid = 0;                  ///< process mode otherwise
  std::optional<MapSpec> match;   ///< process mode: only mappings matching this
  ScanQuery query;                ///< used unless `entropy` or `twins` is set
  std::optional<EntropyQuery> entropy;  ///< --entropy instead of `query`
  std::optional<TwinQuery> twins;       ///< --twins instead of `query`
  std::optional<RamMap> ram_map;  ///< file mode: print guest-physical addresses too
  bool json = false;              ///< one JSON object per line instead of text
};

/// Prints each hit as it is found (one line, flushed), then a summary line on
/// `err`; --twins prints its groups at the end (largest first), as a twin is
/// known only once the whole file has been seen. Returns kExitOk after a complete (or --max-bounded) scan, whether or
/// not anything was found; kExitPastEnd when the file is shorter than the
/// ram-map says (nothing scanned); else the code of the error (exit_code_for).
int run_scan(const ScanOptions& options, std::ostream& out, std::ostream& err);

/// `extmem walk`.
struct WalkOptions {
  std::string image;                  ///< the RAM image file
  std::optional<RamMap> ram_map;      ///< physical address -> file offset; none: identity
  std::uint64_t root = 0;             ///< physical address of the root table
  WalkFormat format;
  std::vector<std::uint64_t> addresses;  ///< virtual addresses to translate
  bool all_chains = false;            ///< walk every half of dual entries
  bool json = false;                  ///< one JSON object per VA instead of text
};

/// Walks each VA and prints every step. Returns kExitOk when every VA
/// translated; else the code of the first that did not: kExitFailed (an
/// invalid entry), kExitRefused (VA outside the format's range, or a table
/// outside the ram-map), kExitPastEnd (a table past the end of the file, or a
/// file shorter than the ram-map says), or another exit_code_for.
int run_walk(const WalkOptions& options, std::ostream& out, std::ostream& err);

}  // namespace extmem::memtools
