// Fuzzes EXTMEM_RECLAIM_BUDGET_MB parsing: an accepted value must be digits
// only and in range; a rejected one must name the variable.
#include <cstddef>
#include <cstdint>
#include <string>

#include "extmem/reclaim/deferred_list.h"

namespace rc = extmem::reclaim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto bytes = rc::parse_budget_mib(text);
  if (bytes) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) __builtin_trap();
    if (*bytes % (1ull << 20) != 0 || (*bytes >> 20) > rc::kMaxBudgetMiB) __builtin_trap();
    if (std::stoull(text) != (*bytes >> 20)) __builtin_trap();
  } else if (bytes.error().step != rc::kBudgetEnvVar || bytes.error().kind != extmem::ErrorKind::invalid_argument) {
    __builtin_trap();
  }
  return 0;
}
