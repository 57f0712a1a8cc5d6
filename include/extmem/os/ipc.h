// Framed messages with fd passing over a SOCK_SEQPACKET socket, or without fds
// over a byte stream (a TCP connection of a tcp: endpoint, os/endpoint.h).
//
// Wire format of one frame (one datagram), little-endian:
//   offset 0  u32 magic   'EXMF' (0x464d5845)
//   offset 4  u16 version 1
//   offset 6  u16 type    one of MsgType
//   offset 8  u32 length  payload bytes that follow the 16-byte header (<= kMaxPayload)
//   offset 12 u32 fd count 0 or 1; must equal the number of SCM_RIGHTS fds received
//   offset 16 payload
// SOCK_SEQPACKET keeps frame boundaries, so a short datagram is a truncated frame,
// never the start of the next one. On a SOCK_STREAM socket the same frames follow
// each other in the byte stream with fd count 0: the header's length says where
// the next one starts, a length over kMaxPayload is refused before any payload is
// read, and once a frame's first byte came the rest must come within
// kStreamFrameRestMs (a peer that stops mid-frame cannot hold the reader).
// A stream carries no fds: sending one is refused (ErrorKind::unsupported).
//
// The fd of a frame crosses one of two ways (FdTransport, set per channel; both
// ends must use the same one):
//   scm    the fd rides the frame as SCM_RIGHTS (fd count 1);
//   pidfd  the sender first sends an fd_offer frame, payload "pid <P> fd <N>"
//          (its own pid and the fd's number in it, decimal), and waits for the
//          fd_ack; the receiver fetches the fd with pidfd_getfd (os/pidfd.h) and
//          acks with an empty payload, or with the refusal (its step, code and
//          detail on three lines: the sender keeps them verbatim); then the
//          frame itself follows with fd count 0, and the receiver hands it out
//          with the fetched fd, or with the refusal in Frame::fd_refused.
// The pid is announced rather than taken from SO_PEERCRED: the probe's peer
// sockets are socketpairs made by the parent, whose SO_PEERCRED names the
// parent, not the process at the other end.
#pragma once

#include <cstdint>
#include <optional>
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
  fd_offer = 9, ///< FdTransport::pidfd, sender -> receiver: "pid <P> fd <N>", the frame with the fd follows the ack
  fd_ack = 10,  ///< FdTransport::pidfd, receiver -> sender: empty (fetched) or the refusal: "step\ncode\ndetail"
};

/// How a frame's fd crosses the socket (see the top of this file).
enum class FdTransport : std::uint8_t {
  scm,    ///< SCM_RIGHTS ancillary data on the frame itself
  pidfd,  ///< the number crosses; the receiver fetches the fd with pidfd_getfd (Linux 5.6+)
};

/// "scm" or "pidfd".
const char* to_string(FdTransport transport) noexcept;

inline constexpr std::uint32_t kFrameMagic = 0x464d5845;
inline constexpr std::uint16_t kFrameVersion = 1;
inline constexpr std::size_t kFrameHeaderSize = 16;
// Stays under the default SOCK_SEQPACKET send buffer (net.core.wmem_default, ~208 KiB),
// so a maximal frame never fails with EMSGSIZE.
inline constexpr std::size_t kMaxPayload = 64 * 1024;  ///< bytes
/// On a stream: how long the rest of a frame may take once its first byte came.
inline constexpr int kStreamFrameRestMs = 10'000;

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
  /// FdTransport::pidfd: the sender offered an fd and fetching it failed (the
  /// fetch's step and errno verbatim, os/pidfd.h); `fd` is then invalid.
  std::optional<Error> fd_refused;
};

/// What the fds of one channel did (FdTransport::pidfd counts; scm counts too).
struct FdTransportLog {
  unsigned crossed = 0;          ///< fds this end sent or received that arrived
  std::optional<Error> refused;  ///< the first fetch that failed, at either end (the sender learns it from the ack)
};

/// One end of a SOCK_SEQPACKET socket, or of a SOCK_STREAM one (no fds), owned.
class Channel {
 public:
  Channel() = default;
  /// Takes `fd`; a SOCK_STREAM socket (SO_TYPE, read once here) is framed as a stream.
  explicit Channel(UniqueFd fd);

  /// socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC). Errors: os_error("socketpair").
  static Result<std::pair<Channel, Channel>> pair();

  /// Sends one frame; `fd` (borrowed, -1 for none) stays owned by the caller.
  /// scm: it crosses with SCM_RIGHTS. pidfd: the offer is sent and this call
  /// waits (at most `ack_timeout_ms`, -1: forever) for the receiver's ack, so
  /// `fd` must stay open until it returns; a refused fetch is not an error of
  /// send (the frame still follows, the conversation stays in step): it is
  /// recorded in log().refused. Errors: an fd on a stream (unsupported, step
  /// "send frame"), payload too large (invalid_argument),
  /// os_error("sendmsg") (EPIPE when the peer is gone); pidfd also the recv
  /// errors of waiting for the ack, protocol when something else than an ack came.
  Status send(MsgType type, std::string_view payload, int fd = -1, int ack_timeout_ms = -1) const;

  /// Receives one frame, waiting at most `timeout_ms` (-1: forever; pidfd: for
  /// the offer and again for the frame after it). Errors: timeout; peer_closed
  /// ("peer closed the socket") on EOF or an empty datagram, and on ECONNRESET
  /// (a peer that closed with frames unread; code and errno kept); the decode errors of decode_frame_header
  /// (on a stream also: the connection closed mid-frame, or the rest of a frame
  /// did not come within kStreamFrameRestMs);
  /// os_error("recvmsg"|"poll"); protocol on an fd_offer that is malformed or
  /// arrives on an scm channel, or an ack nobody waits for. Any fd that arrived
  /// with a bad frame is closed, never leaked. A pidfd fetch that fails is not
  /// an error: the frame comes with Frame::fd_refused set.
  Result<Frame> recv(int timeout_ms = -1) const;

  /// How this end's fds cross (both ends must agree). Default scm.
  void set_fd_transport(FdTransport transport) noexcept { transport_ = transport; }
  FdTransport fd_transport() const noexcept { return transport_; }
  /// Whether frames may carry an fd: false on a stream (a TCP connection).
  bool carries_fds() const noexcept { return !stream_; }
  /// What the fds of this end did so far.
  const FdTransportLog& log() const noexcept { return log_; }

  int fd() const noexcept { return fd_.get(); }
  UniqueFd& owned_fd() noexcept { return fd_; }

 private:
  Status send_frame(MsgType type, std::string_view payload, int fd) const;
  Result<Frame> recv_frame(int timeout_ms) const;
  Result<Frame> recv_stream_frame() const;
  UniqueFd fd_;
  bool stream_ = false;
  FdTransport transport_ = FdTransport::scm;
  mutable FdTransportLog log_;  // send() and recv() are const: the log is what they observed, not the channel's state
};

}  // namespace extmem::os
