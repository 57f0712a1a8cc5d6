// `extmem report`: many `extmem probe --json` documents (one per device or
// run) merged into one device x row matrix, as Markdown or a self-contained
// HTML page. Reads schema docs/probe-result.schema.json, schema_version 1.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"

namespace extmem::report {

/// schema_version values this reader understands (docs/probe-result.schema.json).
inline constexpr int kSupportedSchemaVersions[] = {1};

/// One row of one run: its status and the figures the matrix shows.
struct Cell {
  std::string status;     ///< "OK", "PARTIAL", "FAIL", "UNSUPPORTED", "SKIP"
  std::string why;        ///< the row's why: text ("" for OK)
  std::string figures;    ///< key --measure figures in one line, "" when the row was not measured
};

/// One probe document: which device it describes and its rows in print order.
struct Run {
  std::string file;       ///< as named on the command line
  std::string device;     ///< selected Vulkan device name
  std::string driver;     ///< driver name and info, e.g. "llvmpipe (Mesa 22.3.6 (LLVM 15.0.6))"
  std::string generated_at;
  std::string options;    ///< non-default options in short form, e.g. "measure memory-type=all"
  std::vector<std::pair<std::string, Cell>> rows;
};

/// Parses `text` (the contents of `file`) as a probe document. Errors
/// (invalid_argument, step = `file`): not JSON (detail has the parser's line,
/// column and byte position), not an extmem-probe-result document, a
/// schema_version this reader does not support (detail names the accepted
/// ones), or a required field (rows[].row/status, vulkan.devices[selected])
/// missing or of the wrong type.
Result<Run> parse_run(const std::string& file, const std::string& text);

/// Reads and parses `path`. Errors: parse_run's, and os_error("read FILE") when it cannot be read.
Result<Run> load_run(const std::string& path);

/// The matrix as GitHub-flavoured Markdown: one line per row name (union of
/// all runs, first-seen order), one column per run; a cell is the status in
/// bold plus the key figures. "—" where a run has no such row.
std::string markdown(const std::vector<Run>& runs);

/// The same matrix as one HTML5 page with inline CSS and no external asset
/// (no script, font, image or link), statuses coloured, why: texts as titles.
std::string html(const std::vector<Run>& runs);

/// The key figures of one row's "measure" object in one line: the leg with
/// the lowest CPU read ratio ("cpu r x0.37 w x1.02 (vkimport)"), the GPU copy
/// in/out GB/s against device-local, and export/import/map µs. "" for null.
std::string key_figures(const nlohmann::json& measure);

}  // namespace extmem::report
