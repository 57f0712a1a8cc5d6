// The child half of phase A's fd-transport check (probe/parent/fd_check.h).
#pragma once

namespace extmem::probe {

/// `extmem probe --fd-transport-check`: expects a socket on fd 3 whose other end
/// offers one fd by pidfd (os/ipc.h, FdTransport::pidfd); receives it (fetching it
/// with pidfd_getfd), answers "same <st_dev> <st_ino> uid <uid> pid <pid>" with the
/// fetched fd's identity, or "refused uid <uid> pid <pid>" when the fetch failed (the
/// other end has the errno from the ack), and closes the fetched fd. Waits at most
/// 5 s for the offer. Returns the exit code: 0 when it answered, 1 when the socket
/// failed, 2 (kExitUsage) when fd 3 is not a socket.
int run_fd_transport_check();

}  // namespace extmem::probe
