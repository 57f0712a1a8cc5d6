// The key --measure figures of one row of a probe document, in one line (a
// cell of `extmem report`'s matrix). Private: it reads the document's JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace extmem::report {

/// The key figures of one row's "measure" object in one line: the leg with
/// the lowest CPU read ratio ("cpu r x0.37 w x1.02 (vkimport)"), the GPU copy
/// in/out GB/s against device-local, and export/import/map µs. "" for null.
std::string key_figures(const nlohmann::json& measure);

}  // namespace extmem::report
