// Fuzzes the IPC frame decoder with arbitrary datagrams and fd counts.
#include <cstddef>
#include <cstdint>
#include <span>

#include "extmem/os/ipc.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t fds = data[0] % 3;  // first byte: how many fds "arrived"
  auto bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  auto header = extmem::os::decode_frame_header(bytes, fds);
  if (header && (header->length + extmem::os::kFrameHeaderSize != bytes.size() || header->fd_count != fds)) __builtin_trap();
  return 0;
}
