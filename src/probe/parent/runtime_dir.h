// A private XDG_RUNTIME_DIR for the probe's own processes when the caller gave
// none: find() and serve() each hold one while their workers run.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "extmem/probe/findings.h"

namespace extmem::probe {

// libwayland-client, which the drivers' EGL and Vulkan WSI load, prints "error:
// XDG_RUNTIME_DIR is invalid or not set in the environment." when the variable is
// unset or not absolute (a fresh root shell, a service). That is not an error of
// the probe, so its processes get a private directory for the run (mkdtemp: a new
// name, mode 0700): set in this process's environment before any child starts
// (children inherit it), put back and removed when the holder is destroyed, after
// the workers are reaped, or when SIGINT, SIGTERM or SIGHUP ends the process first
// (only where the caller left those at their default action; it is restored after).
// One at a time per process.
class PrivateRuntimeDir {
 public:
  PrivateRuntimeDir();
  ~PrivateRuntimeDir();
  PrivateRuntimeDir(const PrivateRuntimeDir&) = delete;
  PrivateRuntimeDir& operator=(const PrivateRuntimeDir&) = delete;

  /// Fills the context's private_runtime_dir and runtime_dir_was when one was made.
  void describe(RunContext& c) const;

 private:
  void remove_on_ending_signals();
  void restore_signals();

  std::string dir_;
  std::optional<std::string> was_;
  bool installed_[3] = {};  // per kEndingSignals
};

}  // namespace extmem::probe
