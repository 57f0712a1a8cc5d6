#include "extmem/os/ipc.h"

#include <poll.h>
#include <sys/socket.h>

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "extmem/os/pidfd.h"

namespace extmem::os {
namespace {

template <typename T>
T load_le(const std::byte* p) {
  T v{};
  std::memcpy(&v, p, sizeof v);  // x86-64 and arm64 are little-endian, the wire is too
  return v;
}

template <typename T>
void store_le(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

Error protocol(std::string detail) {
  return Error{"decode frame", ErrorKind::protocol, {}, std::move(detail)};
}

bool known_type(std::uint16_t t) { return t >= 1 && t <= 10; }

Error stray(std::string detail) { return Error{"fd transport", ErrorKind::protocol, {}, std::move(detail)}; }

// The ack's payload for a refused fetch, and back: four lines, so the sender
// keeps the receiver's errno number, step, errno code and text verbatim.
std::string encode_refusal(const Error& e) {
  return fmt::format("{}\n{}\n{}\n{}", e.space == CodeSpace::errno_value ? e.native : 0, e.step, e.code, e.detail);
}
Error decode_refusal(const std::string& text) {
  std::size_t at[3];
  for (std::size_t i = 0, from = 0; i < 3; from = at[i++] + 1)
    if ((at[i] = text.find('\n', from)) == std::string::npos) return Error{"pidfd_getfd", ErrorKind::os, {}, text};
  int errnum = 0;
  const char* first = text.data();
  if (std::from_chars(first, first + at[0], errnum).ptr != first + at[0]) errnum = 0;
  Error e{text.substr(at[0] + 1, at[1] - at[0] - 1), ErrorKind::os, text.substr(at[1] + 1, at[2] - at[1] - 1),
          text.substr(at[2] + 1)};
  if (errnum > 0) e.space = CodeSpace::errno_value, e.native = errnum;
  return e;
}

// "pid <P> fd <N>", both positive decimal numbers that fit an int.
bool parse_offer(const std::string& text, int& pid, int& fd) {
  char tail = 0;
  return std::sscanf(text.c_str(), "pid %d fd %d%c", &pid, &fd, &tail) == 2 && pid > 0 && fd >= 0;
}

// A receive that failed. A peer that closed with bytes it never read leaves
// ECONNRESET instead of an end of file (AF_UNIX and TCP alike): that is the peer
// going away too, so it is peer_closed, with the socket's code kept.
Error recv_error(std::string step, int err) {
  if (err != ECONNRESET) return os_error(std::move(step), err);
  return coded_error(std::move(step), ErrorKind::peer_closed, CodeSpace::errno_value, err, errno_code(err),
                     "peer closed the socket with frames unread");
}

// Reads until `out` is full, EOF, or `deadline` (os::monotonic_seconds) passes;
// returns how many bytes came. Errors: os_error("poll"); recv_error("read").
Result<std::size_t> read_until(int fd, std::span<std::byte> out, double deadline) {
  std::size_t got = 0;
  while (got < out.size()) {
    const double left = deadline - monotonic_seconds();
    if (left <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    const int r = ::poll(&pfd, 1, static_cast<int>(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return os_error("poll", errno);
    if (r == 0) continue;
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return recv_error("read", errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

// The header's own fields, before anything depends on its length.
Result<FrameHeader> decode_header_fields(const std::byte* p) {
  auto magic = load_le<std::uint32_t>(p);
  auto version = load_le<std::uint16_t>(p + 4);
  auto type = load_le<std::uint16_t>(p + 6);
  auto length = load_le<std::uint32_t>(p + 8);
  auto fd_count = load_le<std::uint32_t>(p + 12);
  if (magic != kFrameMagic) return protocol(fmt::format("bad magic 0x{:08x}", magic));
  if (version != kFrameVersion) return protocol(fmt::format("unknown frame version {}", version));
  if (!known_type(type)) return protocol(fmt::format("unknown message type {}", type));
  if (length > kMaxPayload) return protocol(fmt::format("payload length {} over limit {}", length, kMaxPayload));
  return FrameHeader{static_cast<MsgType>(type), length, fd_count};
}

}  // namespace

Result<FrameHeader> decode_frame_header(std::span<const std::byte> bytes, std::size_t fds_received) {
  if (bytes.size() < kFrameHeaderSize)
    return protocol(fmt::format("truncated frame: {} bytes, header needs {}", bytes.size(), kFrameHeaderSize));
  auto header = decode_header_fields(bytes.data());
  if (!header) return header;
  if (bytes.size() != kFrameHeaderSize + header->length)
    return protocol(fmt::format("frame says {} payload bytes, datagram has {}", header->length,
                                bytes.size() - kFrameHeaderSize));
  if (header->fd_count > 1 || header->fd_count != fds_received)
    return protocol(fmt::format("frame says {} fds, {} arrived", header->fd_count, fds_received));
  return header;
}

void encode_frame_header(MsgType type, std::uint32_t length, std::uint32_t fd_count,
                         std::span<std::byte, kFrameHeaderSize> out) {
  store_le(out.data(), kFrameMagic);
  store_le(out.data() + 4, kFrameVersion);
  store_le(out.data() + 6, static_cast<std::uint16_t>(type));
  store_le(out.data() + 8, length);
  store_le(out.data() + 12, fd_count);
}

Channel::Channel(UniqueFd fd) : fd_(std::move(fd)) {
  int type = 0;
  socklen_t len = sizeof type;
  stream_ = fd_.valid() && ::getsockopt(fd_.get(), SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

Result<std::pair<Channel, Channel>> Channel::pair() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return os_error("socketpair", errno);
  return std::pair{Channel(UniqueFd(sv[0])), Channel(UniqueFd(sv[1]))};
}

Status Channel::send_frame(MsgType type, std::string_view payload, int fd) const {
  if (payload.size() > kMaxPayload)
    return Error{"send frame", ErrorKind::invalid_argument, {}, fmt::format("payload {} bytes over limit", payload.size())};
  std::byte header[kFrameHeaderSize];
  encode_frame_header(type, static_cast<std::uint32_t>(payload.size()), fd >= 0 ? 1 : 0,
                      std::span<std::byte, kFrameHeaderSize>(header));
  iovec iov[2] = {{header, sizeof header}, {const_cast<char*>(payload.data()), payload.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = payload.empty() ? 1 : 2;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  // A datagram goes whole or not at all; a stream may take it in pieces.
  std::size_t left = sizeof header + payload.size();
  for (;;) {
    const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("sendmsg", errno);
    left -= static_cast<std::size_t>(n);
    if (!stream_ || left == 0) return {};
    std::size_t sent = static_cast<std::size_t>(n);
    while (msg.msg_iovlen > 0 && sent >= msg.msg_iov->iov_len) {
      sent -= msg.msg_iov->iov_len;
      ++msg.msg_iov;
      --msg.msg_iovlen;
    }
    msg.msg_iov->iov_base = static_cast<char*>(msg.msg_iov->iov_base) + sent;
    msg.msg_iov->iov_len -= sent;
  }
}

Result<Frame> Channel::recv_stream_frame() const {
  const double deadline = monotonic_seconds() + kStreamFrameRestMs / 1000.0;
  auto short_of = [](const char* what, std::size_t got, std::size_t want) {
    return protocol(fmt::format("truncated frame: {} of {} {} bytes came (the connection closed, or {} ms passed)", got,
                                want, what, kStreamFrameRestMs));
  };
  std::vector<std::byte> buf(kFrameHeaderSize);
  auto got = read_until(fd_.get(), buf, deadline);
  if (!got) return std::move(got).error();
  if (*got == 0) return Error{"recv frame", ErrorKind::peer_closed, {}, "peer closed the socket"};
  if (*got < kFrameHeaderSize) return short_of("header", *got, kFrameHeaderSize);
  // Checked before the payload is read: garbage is named as such, and a length over
  // the limit is never an allocation the peer chooses.
  auto fields = decode_header_fields(buf.data());
  if (!fields) return std::move(fields).error();
  const std::uint32_t length = fields->length;
  buf.resize(kFrameHeaderSize + length);
  got = read_until(fd_.get(), std::span(buf).subspan(kFrameHeaderSize), deadline);
  if (!got) return std::move(got).error();
  if (*got < length) return short_of("payload", *got, length);
  auto header = decode_frame_header(buf, 0);
  if (!header) return std::move(header).error();
  Frame frame;
  frame.type = header->type;
  frame.payload.assign(reinterpret_cast<const char*>(buf.data()) + kFrameHeaderSize, header->length);
  return frame;
}

Result<Frame> Channel::recv_frame(int timeout_ms) const {
  pollfd pfd{fd_.get(), POLLIN, 0};
  int r;
  do {
    r = ::poll(&pfd, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return os_error("poll", errno);
  if (r == 0) return Error{"recv frame", ErrorKind::timeout, {}, fmt::format("nothing within {} ms", timeout_ms)};
  if (stream_) return recv_stream_frame();

  std::vector<std::byte> buf(kFrameHeaderSize + kMaxPayload);
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for more fds than we accept, so extra ones are received (and closed) rather than dropped silently.
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return recv_error("recvmsg", errno);

  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
      fds.emplace_back(received);
    }
  }
  if (n == 0 && fds.empty()) return Error{"recv frame", ErrorKind::peer_closed, {}, "peer closed the socket"};
  if (msg.msg_flags & MSG_TRUNC) return protocol("datagram larger than the largest frame");
  if (msg.msg_flags & MSG_CTRUNC) return protocol("too many fds attached");

  auto header = decode_frame_header(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), fds.size());
  if (!header) return std::move(header).error();
  Frame frame;
  frame.type = header->type;
  frame.payload.assign(reinterpret_cast<const char*>(buf.data()) + kFrameHeaderSize, header->length);
  if (!fds.empty()) frame.fd = std::move(fds.front());
  return frame;
}

const char* to_string(FdTransport transport) noexcept { return transport == FdTransport::pidfd ? "pidfd" : "scm"; }

Status Channel::send(MsgType type, std::string_view payload, int fd, int ack_timeout_ms) const {
  if (stream_ && fd >= 0)
    return Error{"send frame", ErrorKind::unsupported, {}, "a stream connection (TCP) carries bytes, never fds"};
  if (fd < 0 || transport_ == FdTransport::scm) {
    Status sent = send_frame(type, payload, fd);
    if (sent && fd >= 0) ++log_.crossed;
    return sent;
  }
  // The number crosses; `fd` stays open in this process (the caller's) until the
  // ack says the receiver has its own duplicate, or could not make one.
  if (auto s = send_frame(MsgType::fd_offer, fmt::format("pid {} fd {}", ::getpid(), fd), -1); !s) return s;
  auto ack = recv_frame(ack_timeout_ms);
  if (!ack) return std::move(ack).error();
  if (ack->type != MsgType::fd_ack)
    return stray(fmt::format("expected the fd_ack of an fd_offer, got message type {}", static_cast<int>(ack->type)));
  if (ack->payload.empty()) {
    ++log_.crossed;
  } else if (!log_.refused) {
    log_.refused = decode_refusal(ack->payload);
  }
  return send_frame(type, payload, -1);
}

Result<Frame> Channel::recv(int timeout_ms) const {
  auto frame = recv_frame(timeout_ms);
  if (!frame) return frame;
  if (frame->type == MsgType::fd_ack) return stray("an fd_ack that no fd_offer of this end waited for");
  if (frame->type != MsgType::fd_offer) {
    if (frame->fd.valid()) ++log_.crossed;
    return frame;
  }
  if (transport_ != FdTransport::pidfd) return stray("an fd_offer on a channel that passes fds with SCM_RIGHTS");
  int pid = 0, number = -1;
  if (!parse_offer(frame->payload, pid, number))
    return stray(fmt::format("malformed fd_offer \"{}\" (expected \"pid <P> fd <N>\")", frame->payload.substr(0, 64)));
  auto fetched = fetch_fd(pid, number);
  if (auto s = send_frame(MsgType::fd_ack, fetched ? std::string() : encode_refusal(fetched.error()), -1); !s)
    return std::move(s).error();
  auto carried = recv_frame(timeout_ms);
  if (!carried) return carried;
  if (carried->type == MsgType::fd_offer || carried->type == MsgType::fd_ack || carried->fd.valid())
    return stray(fmt::format("the frame after an fd_offer is message type {}{}", static_cast<int>(carried->type),
                             carried->fd.valid() ? " with an SCM_RIGHTS fd" : ""));
  if (fetched) {
    carried->fd = std::move(*fetched);
    ++log_.crossed;
  } else {
    carried->fd_refused = fetched.error();
    if (!log_.refused) log_.refused = fetched.error();
  }
  return carried;
}

}  // namespace extmem::os
