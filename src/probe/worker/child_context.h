// What a route's child process has: its role, the peer socket (fd 3), the
// report socket to the parent (fd 4), and the run's parameters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/os/ipc.h"
#include "probe/half_params.h"
#include "probe/layout.h"
#include "probe/route_report.h"

namespace extmem::probe {

/// "fd transport pidfd: <step> -> <code> (<detail>)": the UNSUPPORTED reason of a
/// row whose fd could not be fetched, e.g. "fd transport pidfd: pidfd_getfd(pid
/// 1234, fd 7) -> EPERM (1) (Operation not permitted)".
std::string fd_refusal_reason(const Error& refused);

class ChildContext {
 public:
  ChildContext(HalfParams params, os::Channel peer, os::Channel parent);

  const HalfParams& params() const { return params_; }
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
  HalfParams params_;
  os::Channel peer_;
  os::Channel parent_;
};

}  // namespace extmem::probe
