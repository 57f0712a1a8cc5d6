// The one way a route hands an fd to a driver's import: a dup of it, so the
// route keeps its own fd whatever the driver does with the copy. Vulkan's,
// GL's and CUDA's fd imports take ownership of the fd on success and leave it
// to the caller on failure; a leak or a double close hides there, so after the
// import the dup is checked (still open, and still the same open file?) and
// released only when consumed. docs/probe.md, "Who owns the fd after an import".
#pragma once

#include <string>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::probe {

class ImportDup {
 public:
  /// dup(2)s `fd` (F_DUPFD_CLOEXEC). The dup is owned here until settle() says
  /// the driver took it. `fd` stays the caller's and must stay open until
  /// settle(): the dup is recognised by sharing its open file. Errors:
  /// os::dup_fd's (step "dup", the errno).
  static Result<ImportDup> of(int fd);

  /// The dup's fd number, to pass to the import call (and, before it, to
  /// queries such as vkGetMemoryFdPropertiesKHR that do not take ownership).
  int number() const { return fd_.get(); }

  /// After the import call: `import_succeeded` is whether the driver took the fd
  /// (for Vulkan: the import succeeded or the memory was allocated). Checks
  /// whether the dup's number still names the dup: open, and the same open file
  /// as the caller's fd (kcmp(2) KCMP_FILE; where kcmp is not available, open
  /// alone). A number the driver closed may already name another file (a
  /// driver thread's new fd takes the lowest free number), which must be
  /// counted as consumed and never closed here. Gives up our handle when the
  /// driver owns or already closed the dup, so it is closed exactly once.
  /// Returns "fd-consumed=yes|no", plus the anomaly when the driver kept the fd
  /// after a success or closed it after a failure. Call once; afterwards
  /// number() is -1 when the handle was given up.
  std::string settle(bool import_succeeded);

  /// Whether settle() gave up the handle (the driver owns or closed the fd).
  bool consumed() const { return consumed_; }

 private:
  ImportDup(os::UniqueFd fd, int source) : fd_(std::move(fd)), source_(source) {}
  os::UniqueFd fd_;
  int source_;  ///< the caller's fd the dup was made from
  bool consumed_ = false;
};

}  // namespace extmem::probe
