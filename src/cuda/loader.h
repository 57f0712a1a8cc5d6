// Loading the CUDA driver (libcuda.so.1) at run time: the binary never links
// it, so it starts on machines without CUDA (issue #4, "Loading").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/cuda/enumerate.h"  // routes_built(), build_note()

namespace extmem::cuda {

/// The library the probe opens: "libcuda.so.1", or the test-only override in
/// the environment variable EXTMEM_CUDA_LIBRARY (a path or soname), which lets
/// tests point the probe at a missing library or at a fake missing one symbol.
std::string driver_library_name();

/// An open driver library with every entry point of EXTMEM_CUDA_SYMBOLS
/// resolved, in list order. Owns the dlopen() handle; closes it on destruction.
class DriverLibrary {
 public:
  /// dlopen(`name`, RTLD_NOW | RTLD_LOCAL), then dlsym() of every listed name.
  /// Errors: no_driver, step "dlopen(<name>)", code "no CUDA driver" (a name
  /// for people: dlopen has no number), detail dlerror()'s text, when the
  /// library cannot be opened; unsupported, step
  /// "dlsym(<first missing>)", code "missing symbol", detail naming every
  /// missing entry point, when the library lacks any of them.
  static Result<std::shared_ptr<DriverLibrary>> open(const std::string& name);
  ~DriverLibrary();
  DriverLibrary(const DriverLibrary&) = delete;
  DriverLibrary& operator=(const DriverLibrary&) = delete;

  const std::string& name() const noexcept { return name_; }
  /// The resolved addresses, one per EXTMEM_CUDA_SYMBOLS entry, in list order; never null.
  const std::vector<void*>& symbols() const noexcept { return symbols_; }

 private:
  DriverLibrary() = default;
  void* handle_ = nullptr;
  std::string name_;
  std::vector<void*> symbols_;
};

/// The listed entry point names, in list order.
const std::vector<const char*>& symbol_names();

}  // namespace extmem::cuda
