// Legs and the verdict of a probe row, computed in one place (docs/probe.md, "Legs and the verdict").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"

namespace extmem {

/// Row status. SKIP and UNSUPPORTED are not failures; PARTIAL and FAIL are.
enum class RowStatus {
  ok,           ///< every decisive leg round-tripped bytes in both directions
  partial,      ///< at least one decisive leg round-tripped, not all
  fail,         ///< no decisive leg round-tripped (or a child crashed, hung, or broke the protocol)
  unsupported,  ///< extension/handle type absent, or an unadvertised handle type was declined
  skip,         ///< cannot run here for a reason outside the driver (platform, filter)
};

/// "OK", "PARTIAL", "FAIL", "UNSUPPORTED", "SKIP".
const char* to_string(RowStatus status) noexcept;

/// Whether a row of this status failed (the exit code, JUnit's failures):
/// PARTIAL and FAIL. OK passed; SKIP and UNSUPPORTED did not run.
bool is_failure(RowStatus status) noexcept;

/// Whether a row of this status did not run its legs: SKIP and UNSUPPORTED
/// (JUnit's skipped). Neither a failure nor a pass.
bool did_not_run(RowStatus status) noexcept;

/// One way the other side reaches the memory (plain mmap, Vulkan import, GPU access, ...).
struct Leg {
  std::string name;            ///< trace key, e.g. "rawmmap", "vkimport", "gpu"; stable interface
  bool decisive = true;        ///< [D] counts for the verdict; [i] informational only
  bool attempted = false;      ///< the leg got as far as comparing bytes or failing a step
  bool read_ok = false;        ///< the allocating side's bytes were visible through this leg
  bool write_ok = false;       ///< this leg's writes came back to the allocating side
  std::string failed_step;     ///< first failing step, empty when none
  std::string code;            ///< the driver's/OS's code for that step, verbatim
  std::string note;            ///< extra facts for the detail (e.g. "payloadAt=4096")

  /// Trace value: "rt", "read-only", "write-only", "no" or "notrun".
  std::string trace_value() const;
};

/// A coherency soak (--soak): round trips repeated for a while, stale 32-bit words counted.
struct SoakCount {
  std::uint64_t stale = 0;   ///< words that did not hold the value just written
  std::uint64_t words = 0;   ///< words checked
  std::uint64_t rounds = 0;  ///< full round trips
};

/// How long an S1 ordering proof withheld its signal, and why (docs/probe.md,
/// "S1"): hold = max(floor, factor x the median of the consumer's un-gated
/// copies, each timed by the host from submit to seen complete), at most ceiling.
struct SyncHold {
  std::string leg;                 ///< the leg whose proof this was ("order", "cudawait-binary", ...)
  double ungated_us = 0;           ///< median un-gated copy, microseconds
  std::uint32_t samples = 0;       ///< un-gated copies timed
  std::uint32_t factor = 0;        ///< the rule's factor
  std::uint64_t floor_ms = 0;      ///< the rule's floor, milliseconds
  std::uint64_t ceiling_ms = 0;    ///< the rule's ceiling, milliseconds
  std::uint64_t wanted_ms = 0;     ///< max(floor, factor x ungated), rounded up, before the ceiling
  std::uint64_t hold_ms = 0;       ///< the hold applied: min(wanted, ceiling)
  bool over_ceiling = false;       ///< wanted_ms > ceiling_ms: the hold was capped, and the row says so
};

/// What decided a row's status, typed: with the error kind, the key a row's
/// failure code is derived from (extmem/probe/failure_codes.h); never its text.
enum class Basis : std::uint8_t {
  legs,             ///< the decisive legs, by the rule table (OK, PARTIAL, FAIL)
  soak,             ///< every decisive leg round-tripped, the soak counted stale words (PARTIAL)
  no_decisive_leg,  ///< the route reported no decisive leg (FAIL)
  stopped,          ///< a skip, fatal or unsupported fact stopped the row (Verdict::kind when typed)
  not_built,        ///< SKIP: the route is not built here (not yet written, or another platform)
  not_selected,     ///< SKIP: --only, --only-GROUP or --no-GROUP left the row out
};

/// "legs", "soak", "no_decisive_leg", "stopped", "not_built", "not_selected".
const char* to_string(Basis basis) noexcept;

/// What a route reported besides its legs.
struct RouteFacts {
  /// Set when the route's capability is absent: extension missing, handle type
  /// not advertised, or an unadvertised handle type declined. Text says which.
  std::optional<std::string> unsupported;
  /// Set when the route cannot run here for a reason outside the driver.
  std::optional<std::string> skip;
  /// Set when the route could not finish at all (crash, timeout, protocol error,
  /// or an advertised capability declined before any leg ran).
  std::optional<std::string> fatal;
  /// Set when --soak ran; any stale word turns OK into PARTIAL.
  std::optional<SoakCount> soak;
  /// The S1 rows: one entry per ordering proof that calibrated its hold.
  std::vector<SyncHold> sync_holds;
  /// The kind of the error behind skip, unsupported or fatal; nullopt where the
  /// site gave text only (the row then gets its status's generic code).
  std::optional<ErrorKind> stop_kind;
  /// Basis::stopped, or why the parent stopped the row before it ran (not_built, not_selected).
  Basis stop_basis = Basis::stopped;
};

/// The status an error of this kind gives a row it stops before its legs
/// decide: no_driver SKIP, unsupported UNSUPPORTED, every other kind FAIL
/// (error.h says when each kind is used).
RowStatus row_status(ErrorKind kind) noexcept;

/// Records `why` in the fact that gives the row row_status(kind): skip,
/// unsupported or fatal, and `kind` in stop_kind. The one mapping from an error to a row's facts.
void stop_row(RouteFacts& facts, ErrorKind kind, std::string why);

/// The verdict of one row.
struct Verdict {
  RowStatus status = RowStatus::fail;
  std::string why;  ///< empty for OK; otherwise the failing step and code, or the reason
  Basis basis = Basis::legs;        ///< what decided the status
  std::optional<ErrorKind> kind;    ///< Basis::stopped: the stopping error's kind, when the site typed it
};

/// The single place a row's status is decided. Precedence: skip, fatal (FAIL),
/// unsupported, then legs by the rule table of docs/probe.md. A route with no
/// decisive leg is FAIL: a mapping with no byte compared is never OK. An OK row
/// whose soak counted stale words becomes PARTIAL ("stale=N/M words in K rounds").
Verdict decide(const RouteFacts& facts, const std::vector<Leg>& legs);

/// "rawmmap[i]=no vkimport[D]=rt gpu[D]=rt".
std::string trace(const std::vector<Leg>& legs);

}  // namespace extmem
