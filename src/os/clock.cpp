#include "extmem/os/clock.h"

#include <time.h>

namespace extmem::os {

double monotonic_seconds() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace extmem::os
