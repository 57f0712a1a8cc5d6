// `extmem report`: many `extmem probe --json` documents (one per device or
// run) merged into one device x row matrix, as Markdown or a self-contained
// HTML page. Reads schema docs/probe-result.schema.json, schema_version 1.
// What `extmem report` runs (src/cli/report_command.cpp); docs/report.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/probe/health.h"

namespace extmem::report {

/// schema_version values this reader understands (docs/probe-result.schema.json).
inline constexpr int kSupportedSchemaVersions[] = {1};

/// One row of one run: its status and the figures the matrix shows.
struct Cell {
  std::string status;     ///< "OK", "PARTIAL", "FAIL", "UNSUPPORTED", "SKIP"
  std::string why;        ///< the row's why: text ("" for OK)
  std::string figures;    ///< key --measure figures in one line, "" when the row was not measured
};

/// The document's "health" object (docs/probe-result.schema.json), when it has one.
struct RunHealth {
  bool ok = true;
  std::size_t problems = 0;
  std::string first;      ///< the first problem as --npd prints it: "ROW STATUS CODE[ at STEP]"; "" when ok
};

/// A driving side's view of a run across a boundary (the document's "peer"; docs/serve.md).
struct PeerOf {
  std::string run_id;       ///< shared with the serving side's document
  std::string endpoint;     ///< --peer as given
  std::string served_role;  ///< the halves the serving side ran
  std::vector<std::string> boundary;  ///< the facts that differ ("uid", "ns:pid", ...), in the document's order
};

/// One session of an `extmem probe serve --json` document (schema "extmem-serve-result").
struct ServedSession {
  std::string file;      ///< the serve document, as named on the command line
  std::string node;      ///< the serving side's hostname
  std::string endpoint;  ///< where it listened
  std::string run_id;    ///< the driving side's run id
  std::uint32_t peer_uid = 0;  ///< the driving peer's uid as the server saw it (SO_PEERCRED; TCP: /proc/net/tcp)
  std::size_t halves = 0;      ///< halves it ran for that session
  std::string ended;           ///< how the session ended; "" when it ran to the peer's close
  std::string refused;         ///< "reason: detail" when it refused part of the session; ""
  /// False when nothing named the peer's user (a tcp: peer of another host or network
  /// namespace, served under --listen-any; its document's uid is null): peer_uid means nothing.
  bool peer_identified = true;
};

/// One probe document: which node and device it describes and its rows in print order.
struct Run {
  std::string file;       ///< as named on the command line
  std::string node;       ///< the node's label: NODE= given with the file, else context.hostname, else the file's name
  std::string device;     ///< selected Vulkan device name
  std::string device_uuid;  ///< its device_uuid ("" when the document has none): tells identical devices of a node apart
  std::string driver;     ///< driver name and info, e.g. "llvmpipe (Mesa 22.3.6 (LLVM 15.0.6))"
  std::string driver_name, driver_info;  ///< the two parts, as a --expect baseline matches them
  std::string generated_at;
  std::optional<std::int64_t> time;  ///< generated_at in Unix seconds; nullopt when the document has none
  std::string options;    ///< non-default options in short form, e.g. "measure memory-type=all"
  std::optional<RunHealth> health;  ///< nullopt for documents written before the health object
  std::optional<PeerOf> peer;       ///< --peer runs only: its serving side and the boundary between them
  std::vector<std::pair<std::string, Cell>> rows;
};

/// What one input file is: a probe document, or a serving side's sessions.
struct Document {
  std::optional<Run> run;
  std::vector<ServedSession> served;
};

/// Parses `text` (the contents of `file`) as a probe document (parse_run()) or
/// an `extmem probe serve --json` document. Errors: parse_run's; for a serve
/// document, invalid_argument (step = `file`) naming a session member missing or
/// of another type.
Result<Document> parse_document_of(const std::string& file, const std::string& text);

/// Reads and parses `path` as either kind. Errors: parse_document_of's, os_error("read FILE").
Result<Document> load_document(const std::string& path);

/// Parses `text` (the contents of `file`) as a probe document. Errors
/// (invalid_argument, step = `file`): not JSON (detail has the parser's line,
/// column and byte position), not an extmem-probe-result document, a
/// schema_version this reader does not support (detail names the accepted
/// ones), or a required field (rows[].row/status, vulkan.devices[selected])
/// missing or of the wrong type.
Result<Run> parse_run(const std::string& file, const std::string& text);

/// Reads and parses `path`. Errors: parse_run's, and os_error("read FILE") when it cannot be read.
Result<Run> load_run(const std::string& path);

/// A command-line input, `FILE` or `NODE=FILE`: split at the first '=' when the
/// text before it is not empty and has no '/' (write ./a=b.json for a file named so).
struct Input {
  std::string node;  ///< "" when not given
  std::string path;
};
Input split_input(const std::string& arg);

/// What a fleet report is asked for beside the runs (docs/report.md).
struct FleetOptions {
  const std::vector<probe::Expectation>* baseline = nullptr;  ///< --expect; null without
  /// Serving sides' sessions (`extmem probe serve --json` inputs), joined to the --peer runs by run id; null without.
  const std::vector<ServedSession>* served = nullptr;
  std::int64_t stale_after_s = 24 * 3600;  ///< a node whose oldest current result is older than the newest input's by more is stale
};

/// The runs of one node's device under the same options, oldest first: one column of the matrix.
struct Target {
  std::string node, device, device_uuid, options;
  std::vector<const Run*> runs;  ///< by generated_at, then command-line order
  const Run& latest() const { return *runs.back(); }
};

/// Groups `runs` into targets (first-seen order): same node, same device (its uuid, else its name), same options.
std::vector<Target> targets_of(const std::vector<Run>& runs);

/// How one row behaved over a target's runs (docs/report.md, "Fleets").
enum class History { single, stable, changed, flaky };
const char* to_string(History h);

/// The history of the statuses `statuses` (oldest first, runs without the row left
/// out) against `expected` (the baseline's status, "" for none): the sequence is
/// the expected status, when there is one, then the statuses; no switch between
/// neighbours is stable (single when the sequence has one entry), one switch is
/// changed, more than one is flaky. `since` is set to the index into `statuses`
/// of the first run after a change's switch (0 for a change from the baseline).
History classify(const std::vector<std::string>& statuses, const std::string& expected, std::size_t* since = nullptr);

/// The matrix as GitHub-flavoured Markdown: one line per row name (union of
/// all runs, first-seen order), one column per target (its latest run); a cell
/// is the status in bold plus the key figures, and a change, a flake or a
/// difference from the baseline; "—" where a target has no such row. A last
/// "changes" column names the targets whose row changed, flaked or differs from
/// the baseline. Then the nodes, the stalest first, and every run; then, when a
/// run crossed a boundary (--peer) or a serve document is given, each such run
/// with its boundary and its serving side's session (joined by run id).
std::string markdown(const std::vector<Run>& runs, const FleetOptions& options = {});

/// The same as one HTML5 page with inline CSS and no external asset
/// (no script, font, image or link), statuses coloured, why: texts as titles.
std::string html(const std::vector<Run>& runs, const FleetOptions& options = {});

}  // namespace extmem::report
