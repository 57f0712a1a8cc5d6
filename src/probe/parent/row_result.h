// The parent's record of one row.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/verdict.h"
#include "extmem/probe/findings.h"  // RowResult is public: what find() returns per row

namespace extmem::probe {


/// "RESULT <row> <STATUS> <trace> [why: ...] [detail: ...]".
std::string result_line(const RowResult& r);

}  // namespace extmem::probe
