// What a route's child process has: its role, the peer socket (fd 3), the
// report socket to the parent (fd 4), and the run's parameters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/os/ipc.h"
#include "probe/layout.h"
#include "probe/route_report.h"

namespace extmem::probe {

enum class Role { server, client };

/// "fd transport pidfd: <step> -> <code> (<detail>)": the UNSUPPORTED reason of a
/// row whose fd could not be fetched, e.g. "fd transport pidfd: pidfd_getfd(pid
/// 1234, fd 7) -> EPERM (1) (Operation not permitted)".
std::string fd_refusal_reason(const Error& refused);
const char* to_string(Role role);

struct ChildParams {
  std::string row;
  Role role = Role::server;
  std::uint32_t device_index = 0;
  Layout layout;
  double soak_s = 0;  ///< --soak seconds; 0: no soak
  int memory_type = -1;  ///< --memory-type: the exporting side allocates from this type; -1: auto
  std::uint32_t image_width = 256, image_height = 256;  ///< --image-size: the image rows' image, texels
  /// How the fds of the peer socket cross: SCM_RIGHTS, or pidfd_getfd for a row's "@pidfd" twin
  /// (os/ipc.h; both halves get the same one).
  os::FdTransport fd_transport = os::FdTransport::scm;
};

class ChildContext {
 public:
  ChildContext(ChildParams params, os::Channel peer, os::Channel parent);

  const ChildParams& params() const { return params_; }
  const Layout& layout() const { return params_.layout; }
  const os::Channel& peer() const { return peer_; }

  /// Tells the parent the step about to be attempted, so a hang or crash is
  /// attributed to it; then applies the test-only fault hook (EXTMEM_TEST_FAULT).
  void step(std::string_view name);

  /// Test-only: whether EXTMEM_TEST_FAULT asks for `action` at a step containing
  /// its STEP-SUBSTRING, for faults a route must inject itself (closefd, nosealing).
  bool test_fault(std::string_view step, std::string_view action) const;

  /// Sends the route's final report to the parent. Only the driving side calls it.
  /// With FdTransport::pidfd it adds the detail "fd-transport=pidfd fds=<N>" (the
  /// fds that crossed at this end), and when a fetch was refused at either end
  /// (os::FdTransportLog::refused) the row is UNSUPPORTED with that refusal,
  /// whatever the route made of the missing fd (docs/probe.md, "How fds cross").
  void report(const RouteReport& report);

 private:
  void apply_fault(std::string_view step);
  ChildParams params_;
  os::Channel peer_;
  os::Channel parent_;
};

}  // namespace extmem::probe
