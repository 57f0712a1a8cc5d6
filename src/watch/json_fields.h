// JSON spellings shared by watch's JSONL series (series.cpp) and its summary (summary.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace extmem::watch {

/// A value that may be unknown (a field the kernel did not show): the number, or null.
inline nlohmann::json opt_json(const std::optional<std::uint64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace extmem::watch
