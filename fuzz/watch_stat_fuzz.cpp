// Fuzzes the /proc/PID/stat parser: an accepted line has a positive pid and a
// comm that is exactly the bytes between the first '(' and the last ')'.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/watch/procfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto st = extmem::watch::parse_stat(text);
  if (st) {
    if (st->pid <= 0 || st->ppid < 0) __builtin_trap();
    const std::size_t open = text.find('('), close = text.rfind(')');
    if (st->comm != text.substr(open + 1, close - open - 1)) __builtin_trap();
  }
  return 0;
}
