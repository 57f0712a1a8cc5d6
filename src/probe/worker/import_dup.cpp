#include "probe/worker/import_dup.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <linux/kcmp.h>

namespace extmem::probe {
namespace {

// Whether `dup` still names the open file it was made from, `source`'s
// (kcmp(2) KCMP_FILE: 0 when both fds refer to one open file description; 1, 2
// or 3 when they do not). True when kcmp itself fails (no CONFIG_KCMP,
// refused): open is then all we know.
bool still_the_dup(int dup, int source) {
  const pid_t self = ::getpid();
  const long r = ::syscall(SYS_kcmp, self, self, KCMP_FILE, dup, source);
  return r <= 0;
}

}  // namespace

Result<ImportDup> ImportDup::of(int fd) {
  auto dup = os::dup_fd(fd);
  if (!dup) return std::move(dup).error();
  return ImportDup(std::move(*dup), fd);
}

std::string ImportDup::settle(bool import_succeeded) {
  const bool ours = os::fd_is_open(fd_.get()) && still_the_dup(fd_.get(), source_);
  // Given up when the driver owns it (a success) or no longer names it here: never
  // closed by us then, as it may be another file's number now.
  if (import_succeeded || !ours) {
    (void)fd_.release();
    consumed_ = true;
  }
  if (import_succeeded)
    return ours ? "fd-consumed=no (import succeeded and the fd is still open: the driver keeps it, so the application "
                  "must not close it)"
                : "fd-consumed=yes";
  return ours ? "fd-consumed=no" : "fd-consumed=yes (a failed import closed an fd it did not own)";
}

}  // namespace extmem::probe
