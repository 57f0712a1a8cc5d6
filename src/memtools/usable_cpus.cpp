#include "memtools/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace extmem::memtools::detail {

unsigned usable_cpus() {
  // The mask is sized for the CPU count the kernel may report (EINVAL means a
  // bigger mask is needed); 64K CPUs is far beyond any machine we meet.
  for (int count = 1024; count <= (1 << 16); count *= 4) {
    cpu_set_t* set = CPU_ALLOC(count);
    if (set == nullptr) break;
    const std::size_t bytes = CPU_ALLOC_SIZE(count);
    CPU_ZERO_S(bytes, set);
    const int rc = ::sched_getaffinity(0, bytes, set);
    const int n = rc == 0 ? CPU_COUNT_S(bytes, set) : 0;
    CPU_FREE(set);
    if (rc == 0) return static_cast<unsigned>(std::max(1, n));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace extmem::memtools::detail
