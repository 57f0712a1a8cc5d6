#include "probe/worker/import_dup.h"

#include "probe/worker/route_util.h"

namespace extmem::probe {

Result<ImportDup> ImportDup::of(int fd) {
  auto dup = os::dup_fd(fd);
  if (!dup) return std::move(dup).error();
  return ImportDup(std::move(*dup));
}

std::string ImportDup::settle(bool import_succeeded) {
  FdOwnership owner = fd_ownership_after_import(fd_.get(), import_succeeded);
  if (owner.release) {
    (void)fd_.release();
    consumed_ = true;
  }
  return owner.text;
}

}  // namespace extmem::probe
