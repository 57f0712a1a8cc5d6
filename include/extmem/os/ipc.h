// Framed messages with fd passing over a SOCK_SEQPACKET socket.
//
// Wire format of one frame (one datagram), little-endian:
//   offset 0  u32 magic   'EXMF' (0x464d5845)
//   offset 4  u16 version 1
//   offset 6  u16 type    one of MsgType
//   offset 8  u32 length  payload bytes that follow the 16-byte header (<= kMaxPayload)
//   offset 12 u32 fd count 0 or 1; must equal the number of SCM_RIGHTS fds received
//   offset 16 payload
// SOCK_SEQPACKET keeps frame boundaries, so a short datagram is a truncated frame,
// never the start of the next one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::os {

enum class MsgType : std::uint16_t {
  step = 1,     ///< child -> parent: the step about to be attempted (payload: text)
  report = 2,   ///< child -> parent: the route's facts and legs (payload: JSON)
  request = 3,  ///< peer -> peer: a request (payload: JSON)
  reply = 4,    ///< peer -> peer: the answer to a request (payload: JSON)
  data = 5,     ///< peer -> peer: raw bytes
  job = 6,      ///< parent -> warm worker: run one route half (payload: JSON; fd: its peer socket)
  done = 7,     ///< warm worker -> parent: the route half returned (payload: JSON exit code, hygiene)
  findings = 8, ///< warm worker -> parent: phase A as the worker found it (payload: JSON)
};

inline constexpr std::uint32_t kFrameMagic = 0x464d5845;
inline constexpr std::uint16_t kFrameVersion = 1;
inline constexpr std::size_t kFrameHeaderSize = 16;
// Stays under the default SOCK_SEQPACKET send buffer (net.core.wmem_default, ~208 KiB),
// so a maximal frame never fails with EMSGSIZE.
inline constexpr std::size_t kMaxPayload = 64 * 1024;  ///< bytes

struct FrameHeader {
  MsgType type{};
  std::uint32_t length = 0;    ///< payload bytes
  std::uint32_t fd_count = 0;  ///< 0 or 1
};

/// Validates a received datagram of `bytes` (header + payload) that arrived
/// with `fds_received` descriptors. Errors (kind protocol, step "decode frame"):
/// shorter than the header, bad magic, unknown version, unknown type, payload
/// over kMaxPayload, length not matching the datagram, fd count not matching.
Result<FrameHeader> decode_frame_header(std::span<const std::byte> bytes, std::size_t fds_received);

/// Serialises a header for `type` with `length` payload bytes and `fd_count` fds.
void encode_frame_header(MsgType type, std::uint32_t length, std::uint32_t fd_count,
                         std::span<std::byte, kFrameHeaderSize> out);

/// One received frame; owns the fd that came with it, if any.
struct Frame {
  MsgType type{};
  std::string payload;
  UniqueFd fd;  ///< invalid when none came
};

/// One end of a SOCK_SEQPACKET socket, owned.
class Channel {
 public:
  Channel() = default;
  explicit Channel(UniqueFd fd) : fd_(std::move(fd)) {}

  /// socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC). Errors: os_error("socketpair").
  static Result<std::pair<Channel, Channel>> pair();

  /// Sends one frame; `fd` (borrowed, -1 for none) crosses with SCM_RIGHTS and
  /// stays owned by the caller. Errors: payload too large (invalid_argument),
  /// os_error("sendmsg") (EPIPE when the peer is gone).
  Status send(MsgType type, std::string_view payload, int fd = -1) const;

  /// Receives one frame, waiting at most `timeout_ms` (-1: forever).
  /// Errors: timeout; protocol "peer closed the socket" on EOF; the decode
  /// errors of decode_frame_header; os_error("recvmsg"|"poll"). Any fd that
  /// arrived with a bad frame is closed, never leaked.
  Result<Frame> recv(int timeout_ms = -1) const;

  int fd() const noexcept { return fd_.get(); }
  UniqueFd& owned_fd() noexcept { return fd_; }

 private:
  UniqueFd fd_;
};

}  // namespace extmem::os
