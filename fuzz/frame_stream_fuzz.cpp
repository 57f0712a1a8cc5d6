// Fuzzes the stream form of the IPC frames (os/ipc.h), what a tcp: endpoint's
// connections carry: the input is the byte stream a peer sent before closing its
// end; the reader takes frames until an error. Every frame it accepts is whole and
// within kMaxPayload, and the stream always ends in an error (EOF or a refusal),
// never a wait: the writer's end is shut.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "extmem/os/ipc.h"

namespace os = extmem::os;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 100'000) return 0;  // under the socket's buffer, so the write below never blocks
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  os::Channel reader{os::UniqueFd(sv[0])};
  const os::UniqueFd writer(sv[1]);
  std::size_t off = 0;
  while (off < size) {
    const ssize_t n = ::write(writer.get(), data + off, size - off);
    if (n <= 0) return 0;
    off += static_cast<std::size_t>(n);
  }
  ::shutdown(writer.get(), SHUT_WR);
  if (reader.carries_fds()) __builtin_trap();
  std::size_t consumed = 0;
  for (;;) {
    auto frame = reader.recv(0);
    if (!frame) {
      if (frame.error().kind == extmem::ErrorKind::timeout) __builtin_trap();  // the bytes are there, or EOF is
      break;
    }
    if (frame->payload.size() > os::kMaxPayload || frame->fd.valid()) __builtin_trap();
    consumed += os::kFrameHeaderSize + frame->payload.size();
    if (consumed > size) __builtin_trap();
  }
  return 0;
}
