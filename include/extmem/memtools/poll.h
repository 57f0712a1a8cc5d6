// `poll`: "write 1 to the wait word when it is 0", unattended, for every
// matching process and every matching mapping, one word per mapping per hit.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/syntax.h"
#include "extmem/memtools/word_access.h"

namespace extmem::memtools {

/// A --when condition: the observed word OP value.
struct Condition {
  CompareOp op = CompareOp::eq;
  std::uint64_t value = 0;

  bool holds(std::uint64_t word) const noexcept { return compare(word, op, value); }
};

/// Parses "OPVALUE" with OP one of == != < <= > >= and VALUE a word value
/// (NumberStyle::value) that fits in `width` bytes, e.g. "==0", "!=0xff".
/// Errors: invalid_argument, step "parse condition"; `syntax` as elsewhere.
Result<Condition> parse_condition(std::string_view text, unsigned width, SyntaxError* syntax = nullptr);

/// What poll watches and writes.
struct PollOptions {
  ProcessFilter processes;             ///< which processes (the poller itself is never one)
  MapSpec match;                       ///< which of their mappings
  std::uint64_t offset = 0;            ///< bytes from each mapping's start to the word
  unsigned width = 4;                  ///< word size in bytes: 1, 2, 4 or 8
  Condition when;                      ///< write when the word satisfies this
  std::uint64_t set = 1;               ///< value written (fits in `width`)
  double period_s = 0.1;               ///< seconds between rounds, > 0
  std::optional<std::uint64_t> max_writes;  ///< stop after this many writes (dry run: would-be writes)
  std::optional<double> duration_s;    ///< stop after this many seconds
  bool dry_run = false;                ///< report what would be written, write nothing
  /// Most processes served in the run (the first that match, in pid order
  /// within a round; a served process that has gone still counts; later
  /// matches are left alone and reported once each); nullopt: every match (--all).
  std::optional<std::uint64_t> max_processes = 1;
};

/// What a poll run did.
struct PollSummary {
  std::uint64_t writes = 0;          ///< words written (dry run: would have written)
  std::uint64_t rounds = 0;          ///< passes over the process list
  std::uint64_t processes_seen = 0;  ///< distinct processes that matched at some point
  std::uint64_t failures = 0;        ///< writes or reads that failed (each reported on `err`)
  std::uint64_t left_out = 0;        ///< matching processes not served: beyond max_processes
};

/// Runs rounds until `max_writes`, `duration_s`, or `*stop` becoming true
/// (checked at least every 50 ms; may be null). Each round lists the matching
/// processes anew (new ones are announced on `out` with "+ pid", vanished ones
/// with "- pid"), reads their maps, and for each mapping matching `match` reads
/// the word at start + offset; when `when` holds it writes `set` with
/// compare-then-write (expecting the value just read), reads it back, and
/// appends an audit line to `audit`; each write also prints a line on `out`.
/// At most `max_processes` processes are served; each further match is
/// reported once on `err` and never written. Before the first write of a run
/// that serves more than one process, a preview lists on `out` every word it
/// would write now ("poll: preview: ..."), so the blast radius is on record.
/// A mapping too small for the word, a process we may not read, a failed
/// write: reported once on `err`, and the run goes on. Never writes a range:
/// one word per mapping per round at most. Returns the summary; errors only
/// when /proc cannot be listed at all.
Result<PollSummary> run_poll(const PollOptions& options, const AuditLog& audit, std::ostream& out,
                             std::ostream& err, const std::atomic<bool>* stop = nullptr);

}  // namespace extmem::memtools
