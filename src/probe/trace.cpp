#include "extmem/probe/trace.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace extmem::probe::tracing {
namespace {

int trace_fd() noexcept {
  static const int fd = [] {
    const char* path = std::getenv("EXTMEM_PROBE_TRACE");
    if (path == nullptr || *path == '\0') return -1;
    return ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }();
  return fd;
}

}  // namespace

void event(std::string_view what) noexcept {
  const int fd = trace_fd();
  if (fd < 0) return;
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  char line[512];
  int n = std::snprintf(line, sizeof line, "%lld.%06ld %d %.*s\n", static_cast<long long>(ts.tv_sec), ts.tv_nsec / 1000,
                        static_cast<int>(::getpid()), static_cast<int>(what.size()), what.data());
  if (n <= 0) return;
  if (n >= static_cast<int>(sizeof line)) n = sizeof line - 1, line[n - 1] = '\n';
  (void)!::write(fd, line, static_cast<std::size_t>(n));
}

}  // namespace extmem::probe::tracing
