// The parked-bytes budget from the API or the environment (docs/reclaim.md, "Bounds").
#include <cstdlib>

#include <fmt/format.h>

#include "extmem/reclaim/deferred_list.h"

namespace extmem::reclaim {

Result<std::uint64_t> parse_budget_mib(const std::string& text) {
  auto bad = [&] {
    return Error{kBudgetEnvVar, ErrorKind::invalid_argument, {},
                 fmt::format("'{}' is not a budget: expected a whole number of MiB from 0 to {} "
                             "(0 turns the byte and count watermarks off)",
                             text, kMaxBudgetMiB)};
  };
  // Digits only: no sign, no spaces, no unit suffix; at most 7 digits cannot overflow.
  if (text.empty() || text.size() > 7) return bad();
  std::uint64_t mib = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad();
    mib = mib * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (mib > kMaxBudgetMiB) return bad();
  return mib << 20;
}

Result<std::uint64_t> resolve_budget(std::optional<std::uint64_t> api_bytes) {
  if (api_bytes) return *api_bytes;
  const char* env = std::getenv(kBudgetEnvVar);
  if (env == nullptr) return kDefaultBudgetBytes;
  return parse_budget_mib(env);
}

}  // namespace extmem::reclaim
