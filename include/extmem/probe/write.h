// The probe's writers: text (what `extmem probe` prints), JSON
// (docs/probe-result.schema.json) and JUnit, each from what find() returned.
#pragma once

#include <array>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

/// Phase A as text: run context, every Vulkan device, EGL/GLES, CUDA, the peer (--peer), and the
/// "== routes (...)" header naming the run's size, regions, timeout and options.
void write_phase_a(std::ostream& out, const PhaseA& phase_a, const ProbeOptions& options);

/// Phase A's parts as text (run context, Vulkan, GL driver, GLES, CUDA, fd
/// transport) without the routes header: what extmem probe serve prints.
void write_found(std::ostream& out, const PhaseA& phase_a);

/// One side's context (extmem/probe/boundary.h) as two indented lines, `which` first ("here", "peer").
void write_side(std::ostream& out, const char* which, const SideContext& context);

/// --peer: the "== peer" section: both sides' contexts and each boundary fact.
void write_peer(std::ostream& out, const PeerFinding& peer);

/// --list-devices: one line per Vulkan device, the selected one marked.
void write_device_list(std::ostream& out, const PhaseA& phase_a);

/// "RESULT <row> <STATUS> <trace> [why: ...] [| detail]", plus the "  measure:" line when measured.
void write_row(std::ostream& out, const RowResult& row);

/// The summary table and the status counts.
void write_summary(std::ostream& out, const std::vector<RowResult>& rows);

/// Whether `row` (a printed name, twins included) is one --only / --only-GROUP
/// asked for; every row is when neither is given. --no-GROUP does not unselect.
bool selected(const ProbeOptions& options, std::string_view row);

/// "26 rows not selected by --only" for the rows of `rows` that `options` did not
/// select, or "" when it selected them all.
std::string not_selected_line(const std::vector<RowResult>& rows, const ProbeOptions& options);

/// As above, with only the selected rows in the table and not_selected_line()
/// for the rest; the counts still cover every row (as the JSON and the verdict do).
void write_summary(std::ostream& out, const std::vector<RowResult>& rows, const ProbeOptions& options);

/// How many rows have each status, indexed by RowStatus (OK, PARTIAL, FAIL, UNSUPPORTED, SKIP).
std::array<int, 5> count_statuses(const std::vector<RowResult>& rows);

/// The --verdict-file line, newline included (grammar: docs/probe.md, "Launch
/// without a shell"): `VERDICT <PASS|FAIL|USAGE|ERROR> exit=<exit_code>
/// rows=<n> OK=<n> PARTIAL=<n> FAIL=<n> UNSUPPORTED=<n> SKIP=<n>`, then
/// ` why: <why>` when `why` is not empty (the problem that ended the run with
/// exit 2 or 3; line breaks in it become spaces, so the line stays one line).
/// The overall word follows the exit code: 0 PASS, 1 FAIL, 2 USAGE, else ERROR.
std::string verdict_line(int exit_code, const std::vector<RowResult>& rows, std::string_view why);

struct Health;

/// The --json document (schema_version kJsonSchemaVersion), with a trailing newline.
/// Its "health" object is `health`'s; when null, assess(findings, options, no baseline)'s.
std::string json_document(const Findings& findings, const ProbeOptions& options, const Health* health = nullptr);

/// The --junit document: one <testcase> per row.
std::string junit_document(const Findings& findings);

}  // namespace extmem::probe
