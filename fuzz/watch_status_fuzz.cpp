// Fuzzes the /proc/PID/status parser: an accepted text's figures must be the
// numbers on the lines it names, and refusing must not crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/watch/procfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = extmem::watch::parse_status(text);
  if (s) {
    // A figure can only be present if its key is in the text.
    if (s->vm_rss_kib && text.find("VmRSS:") == std::string_view::npos) __builtin_trap();
    if (s->rss_shmem_kib && text.find("RssShmem:") == std::string_view::npos) __builtin_trap();
    if (s->threads && text.find("Threads:") == std::string_view::npos) __builtin_trap();
  }
  return 0;
}
