#include "extmem/probe/worker.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "extmem/os/ipc.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

int run_fd_transport_check() {
  struct stat st {};
  if (::fstat(3, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "extmem probe --fd-transport-check: fd 3 is not a socket; the probe starts this mode itself\n");
    return kExitUsage;
  }
  ::fcntl(3, F_SETFD, FD_CLOEXEC);
  os::Channel channel{os::UniqueFd(3)};
  channel.set_fd_transport(os::FdTransport::pidfd);
  auto frame = channel.recv(5000);
  if (!frame) return 1;
  const std::string who = fmt::format("uid {} pid {}", ::getuid(), ::getpid());
  std::string answer = "refused " + who;
  if (frame->fd.valid() && ::fstat(frame->fd.get(), &st) == 0)
    answer = fmt::format("same {} {} {}", static_cast<unsigned long long>(st.st_dev),
                         static_cast<unsigned long long>(st.st_ino), who);
  return channel.send(os::MsgType::reply, answer) ? 0 : 1;
}

}  // namespace extmem::probe
