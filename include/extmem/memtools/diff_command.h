// The `extmem diff` command as a library call: parsed options in, lines on the
// given streams, an exit code out (the codes of commands.h). docs/memtools.md
// shows the output.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/memtools/diff.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// `extmem diff`.
struct DiffOptions {
  DiffSource source;
  std::chrono::nanoseconds interval{std::chrono::seconds(1)};  ///< between snapshots when `command` is empty
  std::vector<std::string> command;  ///< run between the two snapshots instead of waiting (argv; PATH searched)
  unsigned rounds = 1;               ///< comparisons, each against the one before (--watch: more than 1)
  std::size_t max_pages = 20;        ///< pages printed per round, most-changed first (all are counted)
  std::size_t max_words = 8;         ///< words printed per page (all are counted)
  bool json = false;                 ///< JSON lines instead of text
};

/// Takes the first snapshot, then per round waits `interval` (or runs
/// `command`, first round only) and prints the changes: a header saying the
/// target was not stopped, one block per changed page (most-changed first),
/// a summary line per round. Returns kExitOk whether or not anything changed;
/// kExitNoProcess when the process is gone (before or during), kExitPermission
/// when /proc/PID/mem is refused, kExitPastEnd for a range past the end of the
/// file, kExitUsage for a selection that holds nothing or is larger than
/// max_bytes, kExitFailed when the command cannot be started.
int run_diff(const DiffOptions& options, std::ostream& out, std::ostream& err);

/// Parses --range: "ADDR:SIZE[,ADDR:SIZE...]", ADDR an address
/// (NumberStyle::address), SIZE a quantity (K/M/G allowed), > 0, the range not
/// wrapping past 2^64. Errors: invalid_argument, step "parse range"; `syntax`
/// points at the bad character.
Result<std::vector<std::pair<std::uint64_t, std::uint64_t>>> parse_ranges(std::string_view text,
                                                                          SyntaxError* syntax = nullptr);

}  // namespace extmem::memtools
