// The one way a route hands an fd to a driver's import: a dup of it, so the
// route keeps its own fd whatever the driver does with the copy. Vulkan's,
// GL's and CUDA's fd imports take ownership of the fd on success and leave it
// to the caller on failure; a leak or a double close hides there, so after the
// import the dup is checked (still open?) and released only when consumed.
#pragma once

#include <string>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::probe {

class ImportDup {
 public:
  /// dup(2)s `fd` (F_DUPFD_CLOEXEC). The dup is owned here until settle() says
  /// the driver took it. Errors: os::dup_fd's (step "dup", the errno).
  static Result<ImportDup> of(int fd);

  /// The dup's fd number, to pass to the import call (and, before it, to
  /// queries such as vkGetMemoryFdPropertiesKHR that do not take ownership).
  int number() const { return fd_.get(); }

  /// After the import call: `import_succeeded` is whether the driver took the fd
  /// (for Vulkan: the import succeeded or the memory was allocated). Checks
  /// whether the dup is still open and gives up our handle when the driver owns
  /// or already closed it, so it is closed exactly once. Returns
  /// fd_ownership_after_import()'s text: "fd-consumed=yes|no", plus the anomaly
  /// when the driver kept the fd after a success or closed it after a failure.
  /// Call once; afterwards number() is -1 when the handle was given up.
  std::string settle(bool import_succeeded);

  /// Whether settle() gave up the handle (the driver owns or closed the fd).
  bool consumed() const { return consumed_; }

 private:
  explicit ImportDup(os::UniqueFd fd) : fd_(std::move(fd)) {}
  os::UniqueFd fd_;
  bool consumed_ = false;
};

}  // namespace extmem::probe
