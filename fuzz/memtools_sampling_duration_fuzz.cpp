// Fuzzes the duration parser of threads/fds (--sample, --period, --duration):
// an accepted value lies in [1 us, 366 days]; a refusal points inside the input.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/memtools/sampling_duration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  extmem::memtools::SyntaxError bad;
  auto d = extmem::memtools::parse_sampling_duration(text, &bad);
  if (d) {
    if (d->count() < 1 || *d > std::chrono::hours(24 * 366)) __builtin_trap();
    (void)extmem::memtools::describe_duration(*d);
  } else if (bad.column > text.size() || bad.accepted.empty()) {
    __builtin_trap();
  }
  return 0;
}
