// Phase A's fd-transport check: whether pidfd_getfd is permitted between two
// processes of the probe (docs/probe.md, "How fds cross"), and its text.
#pragma once

#include <iosfwd>
#include <string>

#include "extmem/probe/findings.h"

namespace extmem::probe {

/// Starts `exe probe --fd-transport-check` (fd 3: a socket to this process),
/// offers it a 4096-byte memfd of this process by number (os::FdTransport::pidfd,
/// os/ipc.h) and reads whether the child fetched it and saw the same file. At most
/// about 10 s (5 s for the ack, 5 s for the answer); the child is reaped on every
/// path and the memfd closed. Never fails: a check that could not run says why in
/// `refused` with `attempted` false.
FdTransportFinding check_fd_transport(const std::string& exe);

/// "== phase A: fd transport: pidfd_getfd permitted|refused|not checked: …; Yama ptrace_scope …".
void print_fd_transport(std::ostream& out, const FdTransportFinding& finding);


}  // namespace extmem::probe
