// Tests of the framed SOCK_SEQPACKET channel (extmem/os/ipc.h): round trips,
// fd passing, header validation, and hostile datagrams written with raw
// send/sendmsg that must give a protocol error without hanging or leaking fds.
#include "extmem/os/ipc.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "extmem/os/fd.h"

namespace {

using extmem::ErrorKind;
using extmem::os::Channel;
using extmem::os::count_open_fds;
using extmem::os::create_memfd;
using extmem::os::decode_frame_header;
using extmem::os::encode_frame_header;
using extmem::os::Frame;
using extmem::os::kFrameHeaderSize;
using extmem::os::kFrameMagic;
using extmem::os::kFrameVersion;
using extmem::os::kMaxPayload;
using extmem::os::MsgType;
using extmem::os::UniqueFd;

using Clock = std::chrono::steady_clock;

constexpr int kRecvTimeoutMs = 2000;  // a recv that takes this long counts as a hang

std::pair<Channel, Channel> make_pair() {
  auto p = Channel::pair();
  EXPECT_TRUE(p.ok()) << p.error().message();
  return std::move(p).value();
}

// A header with arbitrary field values (not necessarily valid), followed by `payload_bytes` bytes.
std::vector<std::byte> raw_frame(std::uint32_t magic, std::uint16_t version, std::uint16_t type, std::uint32_t length,
                                 std::uint32_t fd_count, std::size_t payload_bytes) {
  std::vector<std::byte> out(kFrameHeaderSize + payload_bytes, std::byte{0x5a});
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &version, 2);
  std::memcpy(out.data() + 6, &type, 2);
  std::memcpy(out.data() + 8, &length, 4);
  std::memcpy(out.data() + 12, &fd_count, 4);
  return out;
}

std::vector<std::byte> valid_frame(MsgType type, std::size_t payload_bytes, std::uint32_t fd_count) {
  return raw_frame(kFrameMagic, kFrameVersion, static_cast<std::uint16_t>(type),
                   static_cast<std::uint32_t>(payload_bytes), fd_count, payload_bytes);
}

// sendmsg of `bytes` with `fds` attached through SCM_RIGHTS; returns sendmsg's result.
ssize_t send_raw(int sock, const std::vector<std::byte>& bytes, const std::vector<int>& fds = {}) {
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control;
  if (!fds.empty()) {
    control.assign(CMSG_SPACE(fds.size() * sizeof(int)), 0);
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  return ::sendmsg(sock, &msg, MSG_NOSIGNAL);
}

// Receives with the hang timeout and checks it came back quickly with a protocol error.
void expect_protocol_error_quickly(const Channel& ch) {
  const auto start = Clock::now();
  auto r = ch.recv(kRecvTimeoutMs);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  ASSERT_FALSE(r.ok()) << "a bad datagram was accepted";
  EXPECT_EQ(r.error().kind, ErrorKind::protocol) << r.error().message();
  EXPECT_LT(ms, kRecvTimeoutMs / 2) << "recv waited instead of rejecting the datagram";
}

Frame recv_ok(const Channel& ch) {
  auto r = ch.recv(kRecvTimeoutMs);
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return {};
  return std::move(r).value();
}

constexpr std::array kAllTypes = {MsgType::step, MsgType::report,  MsgType::request, MsgType::reply,
                                  MsgType::data, MsgType::job, MsgType::done, MsgType::findings};

// ---------------------------------------------------------------- round trips

class IpcRoundTrip : public ::testing::TestWithParam<std::pair<MsgType, bool>> {};

// Every message type crosses with its payload, with and without an fd.
TEST_P(IpcRoundTrip, TypePayloadAndFdArrive) {
  const auto [type, with_fd] = GetParam();
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-rt", 4096);
  ASSERT_TRUE(memfd.ok());
  const std::string payload = "payload of type " + std::to_string(static_cast<int>(type));
  ASSERT_TRUE(a.send(type, payload, with_fd ? memfd->get() : -1).ok());
  Frame f = recv_ok(b);
  EXPECT_EQ(f.type, type);
  EXPECT_EQ(f.payload, payload);
  EXPECT_EQ(f.fd.valid(), with_fd);
  if (with_fd) {
    EXPECT_NE(f.fd.get(), memfd->get());
  }
}

std::vector<std::pair<MsgType, bool>> all_type_fd_cases() {
  std::vector<std::pair<MsgType, bool>> out;
  for (MsgType t : kAllTypes) {
    out.emplace_back(t, false);
    out.emplace_back(t, true);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ipc, IpcRoundTrip, ::testing::ValuesIn(all_type_fd_cases()), [](const auto& info) {
  return "type" + std::to_string(static_cast<int>(info.param.first)) + (info.param.second ? "_fd" : "_nofd");
});

// An empty payload round-trips as an empty payload.
TEST(IpcFraming, EmptyPayloadRoundTrips) {
  auto [a, b] = make_pair();
  ASSERT_TRUE(a.send(MsgType::step, "").ok());
  Frame f = recv_ok(b);
  EXPECT_EQ(f.type, MsgType::step);
  EXPECT_TRUE(f.payload.empty());
  EXPECT_FALSE(f.fd.valid());
}

// Binary payload bytes (including NUL) arrive unchanged.
TEST(IpcFraming, BinaryPayloadUnchanged) {
  auto [a, b] = make_pair();
  std::string payload;
  for (int i = 0; i < 1000; ++i) payload.push_back(static_cast<char>(i * 7));
  ASSERT_TRUE(a.send(MsgType::data, payload).ok());
  EXPECT_EQ(recv_ok(b).payload, payload);
}

// Frames keep their boundaries and order: two sends give two frames, in order.
TEST(IpcFraming, FramesKeepBoundariesAndOrder) {
  auto [a, b] = make_pair();
  ASSERT_TRUE(a.send(MsgType::step, "first").ok());
  ASSERT_TRUE(a.send(MsgType::report, "second").ok());
  Frame f1 = recv_ok(b);
  Frame f2 = recv_ok(b);
  EXPECT_EQ(f1.payload, "first");
  EXPECT_EQ(f1.type, MsgType::step);
  EXPECT_EQ(f2.payload, "second");
  EXPECT_EQ(f2.type, MsgType::report);
}

// A payload of exactly kMaxPayload bytes, the documented limit, is sent and received whole.
TEST(IpcFraming, PayloadAtLimitRoundTrips) {
  auto [a, b] = make_pair();
  std::string payload(kMaxPayload, 'x');
  payload.front() = 'F';
  payload.back() = 'L';
  auto sent = a.send(MsgType::data, payload);
  ASSERT_TRUE(sent.ok()) << sent.error().message();
  Frame f = recv_ok(b);
  EXPECT_EQ(f.payload.size(), kMaxPayload);
  EXPECT_EQ(f.payload, payload);
}

// A payload one byte over kMaxPayload is refused by send with invalid_argument, and nothing is sent.
TEST(IpcFraming, PayloadOverLimitRefusedBySend) {
  auto [a, b] = make_pair();
  auto sent = a.send(MsgType::data, std::string(kMaxPayload + 1, 'x'));
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().kind, ErrorKind::invalid_argument);
  auto r = b.recv(50);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::timeout);
}

// The fd that arrives refers to the same memory: a write through it is read back through the original.
TEST(IpcFdPassing, ReceivedFdSharesTheMemfd) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-pass", 4096);
  ASSERT_TRUE(memfd.ok());
  ASSERT_TRUE(a.send(MsgType::data, "fd", memfd->get()).ok());
  Frame f = recv_ok(b);
  ASSERT_TRUE(f.fd.valid());
  const char msg[] = "written via the received fd";
  ASSERT_EQ(::pwrite(f.fd.get(), msg, sizeof msg, 100), static_cast<ssize_t>(sizeof msg));
  char back[sizeof msg] = {};
  ASSERT_EQ(::pread(memfd->get(), back, sizeof back, 100), static_cast<ssize_t>(sizeof back));
  EXPECT_STREQ(back, msg);
}

// send borrows the fd: the sender's fd is still open after sending it.
TEST(IpcFdPassing, SenderKeepsItsFd) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-borrow", 64);
  ASSERT_TRUE(memfd.ok());
  ASSERT_TRUE(a.send(MsgType::data, "", memfd->get()).ok());
  EXPECT_TRUE(extmem::os::fd_is_open(memfd->get()));
}

// The received fd is close-on-exec, so it cannot leak into a spawned child.
TEST(IpcFdPassing, ReceivedFdIsCloexec) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-cloexec", 64);
  ASSERT_TRUE(memfd.ok());
  ASSERT_TRUE(a.send(MsgType::data, "", memfd->get()).ok());
  Frame f = recv_ok(b);
  ASSERT_TRUE(f.fd.valid());
  EXPECT_NE(::fcntl(f.fd.get(), F_GETFD) & FD_CLOEXEC, 0);
}

// Receiving and dropping frames with fds leaves the open fd count unchanged.
TEST(IpcFdPassing, DroppedFramesCloseTheirFds) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-drop", 64);
  ASSERT_TRUE(memfd.ok());
  const std::size_t before = count_open_fds();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(a.send(MsgType::data, "x", memfd->get()).ok());
    Frame f = recv_ok(b);
    ASSERT_TRUE(f.fd.valid());
  }
  EXPECT_EQ(count_open_fds(), before);
}

// ---------------------------------------------------------------- decode_frame_header

std::span<const std::byte> as_span(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

// encode_frame_header output decodes to the same type, length and fd count.
TEST(IpcHeader, EncodeDecodeAgree) {
  std::vector<std::byte> buf(kFrameHeaderSize + 7);
  encode_frame_header(MsgType::reply, 7, 1, std::span<std::byte, kFrameHeaderSize>(buf.data(), kFrameHeaderSize));
  auto h = decode_frame_header(as_span(buf), 1);
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(h->type, MsgType::reply);
  EXPECT_EQ(h->length, 7u);
  EXPECT_EQ(h->fd_count, 1u);
}

// The header is little-endian with the magic 'EXMF' at offset 0 (the documented wire format).
TEST(IpcHeader, WireLayoutMatchesDocumentation) {
  std::array<std::byte, kFrameHeaderSize> h{};
  encode_frame_header(MsgType::data, 0x01020304, 1, h);
  const unsigned char want[kFrameHeaderSize] = {'E', 'X', 'M', 'F', 1, 0, 5, 0, 4, 3, 2, 1, 1, 0, 0, 0};
  EXPECT_EQ(std::memcmp(h.data(), want, kFrameHeaderSize), 0);
}

// Every decode error is kind protocol with step "decode frame".
void expect_decode_error(const std::vector<std::byte>& bytes, std::size_t fds) {
  auto h = decode_frame_header(as_span(bytes), fds);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().kind, ErrorKind::protocol);
  EXPECT_EQ(h.error().step, "decode frame");
}

// Anything shorter than the 16-byte header is rejected, including zero bytes.
TEST(IpcHeader, RejectsShorterThanHeader) {
  auto full = valid_frame(MsgType::step, 0, 0);
  for (std::size_t n = 0; n < kFrameHeaderSize; ++n) {
    SCOPED_TRACE(n);
    expect_decode_error(std::vector<std::byte>(full.begin(), full.begin() + static_cast<long>(n)), 0);
  }
}

// A wrong magic is rejected.
TEST(IpcHeader, RejectsBadMagic) {
  expect_decode_error(raw_frame(0x46584d45 /* byte-swapped */, kFrameVersion, 1, 0, 0, 0), 0);
}

// A version other than 1 is rejected (0, 2 and 0xffff).
TEST(IpcHeader, RejectsUnknownVersion) {
  for (std::uint16_t v : {std::uint16_t{0}, std::uint16_t{2}, std::uint16_t{0xffff}}) {
    SCOPED_TRACE(v);
    expect_decode_error(raw_frame(kFrameMagic, v, 1, 0, 0, 0), 0);
  }
}

// Types outside 1..10 are rejected (0, 11, 0xffff), while 1..10 are accepted (9 and
// 10, the pidfd transport's offer and ack, are tested in ipc_pidfd_tests.cpp).
TEST(IpcHeader, RejectsUnknownType) {
  for (MsgType t : {MsgType::fd_offer, MsgType::fd_ack}) EXPECT_TRUE(decode_frame_header(as_span(valid_frame(t, 0, 0)), 0).ok());
  for (std::uint16_t t : {std::uint16_t{0}, std::uint16_t{11}, std::uint16_t{0xffff}}) {
    SCOPED_TRACE(t);
    expect_decode_error(raw_frame(kFrameMagic, kFrameVersion, t, 0, 0, 0), 0);
  }
  for (MsgType t : kAllTypes) EXPECT_TRUE(decode_frame_header(as_span(valid_frame(t, 0, 0)), 0).ok());
}

// A length over kMaxPayload is rejected even when the datagram really has that many bytes.
TEST(IpcHeader, RejectsLengthOverLimit) {
  expect_decode_error(valid_frame(MsgType::data, kMaxPayload + 1, 0), 0);
  expect_decode_error(raw_frame(kFrameMagic, kFrameVersion, 5, 0xffffffffu, 0, 0), 0);
}

// A length at kMaxPayload with a matching datagram is accepted.
TEST(IpcHeader, AcceptsLengthAtLimit) {
  EXPECT_TRUE(decode_frame_header(as_span(valid_frame(MsgType::data, kMaxPayload, 0)), 0).ok());
}

// A length that does not match the datagram is rejected, whether it claims more or fewer bytes.
TEST(IpcHeader, RejectsLengthNotMatchingDatagram) {
  expect_decode_error(raw_frame(kFrameMagic, kFrameVersion, 5, 10, 0, 9), 0);
  expect_decode_error(raw_frame(kFrameMagic, kFrameVersion, 5, 10, 0, 11), 0);
  expect_decode_error(raw_frame(kFrameMagic, kFrameVersion, 5, 0, 0, 1), 0);
}

// A header announcing an fd that did not arrive is rejected.
TEST(IpcHeader, RejectsFdAnnouncedButMissing) { expect_decode_error(valid_frame(MsgType::data, 0, 1), 0); }

// An fd that arrived without being announced is rejected.
TEST(IpcHeader, RejectsFdArrivedButNotAnnounced) { expect_decode_error(valid_frame(MsgType::data, 0, 0), 1); }

// More than one fd is rejected even when the count matches.
TEST(IpcHeader, RejectsMoreThanOneFd) { expect_decode_error(valid_frame(MsgType::data, 0, 2), 2); }

// ---------------------------------------------------------------- hostile datagrams through Channel::recv

// A datagram shorter than the header gives a protocol error, promptly.
TEST(IpcRecv, TruncatedHeaderIsProtocolError) {
  auto [a, b] = make_pair();
  auto full = valid_frame(MsgType::step, 0, 0);
  ASSERT_EQ(::send(a.fd(), full.data(), 10, MSG_NOSIGNAL), 10);
  expect_protocol_error_quickly(b);
}

// A header claiming more payload than the datagram carries gives a protocol error, promptly.
TEST(IpcRecv, HeaderClaimingMoreBytesIsProtocolError) {
  auto [a, b] = make_pair();
  auto frame = raw_frame(kFrameMagic, kFrameVersion, 2, 1000, 0, 10);
  ASSERT_EQ(::send(a.fd(), frame.data(), frame.size(), MSG_NOSIGNAL), static_cast<ssize_t>(frame.size()));
  expect_protocol_error_quickly(b);
}

// Random garbage gives a protocol error, promptly.
TEST(IpcRecv, GarbageIsProtocolError) {
  auto [a, b] = make_pair();
  std::vector<std::byte> junk(200);
  for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<std::byte>(i * 37 + 11);
  ASSERT_EQ(::send(a.fd(), junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
  expect_protocol_error_quickly(b);
}

// A peer that closes with frames it never read leaves a reset, not an end of file
// (Linux's AF_UNIX sets ECONNRESET then); it is the peer going away all the same.
TEST(IpcRecv, APeerGoneWithFramesUnreadIsPeerClosed) {
  auto [a, b] = make_pair();
  ASSERT_TRUE(a.send(MsgType::report, "never read").ok());
  { Channel gone = std::move(b); }
  auto f = a.recv(kRecvTimeoutMs);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().kind, ErrorKind::peer_closed) << f.error().message();
  EXPECT_TRUE(f.error().is_errno(ECONNRESET)) << "the socket's own code is kept: " << f.error().message();
}

// After a bad datagram the channel still delivers the next good frame intact.
TEST(IpcRecv, GoodFrameAfterBadOneStillArrives) {
  auto [a, b] = make_pair();
  auto full = valid_frame(MsgType::step, 0, 0);
  ASSERT_EQ(::send(a.fd(), full.data(), 5, MSG_NOSIGNAL), 5);
  ASSERT_TRUE(a.send(MsgType::report, "{}").ok());
  expect_protocol_error_quickly(b);
  Frame f = recv_ok(b);
  EXPECT_EQ(f.type, MsgType::report);
  EXPECT_EQ(f.payload, "{}");
}

// A garbage datagram carrying an fd gives a protocol error and the fd is closed, not leaked.
TEST(IpcRecv, GarbageWithFdDoesNotLeak) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-leak", 64);
  ASSERT_TRUE(memfd.ok());
  const std::size_t before = count_open_fds();
  std::vector<std::byte> junk(40, std::byte{0xee});
  ASSERT_EQ(send_raw(a.fd(), junk, {memfd->get()}), 40);
  expect_protocol_error_quickly(b);
  EXPECT_EQ(count_open_fds(), before);
}

// A truncated header carrying an fd gives a protocol error and the fd is closed.
TEST(IpcRecv, TruncatedHeaderWithFdDoesNotLeak) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-leak", 64);
  ASSERT_TRUE(memfd.ok());
  const std::size_t before = count_open_fds();
  auto full = valid_frame(MsgType::data, 0, 1);
  full.resize(8);
  ASSERT_EQ(send_raw(a.fd(), full, {memfd->get()}), 8);
  expect_protocol_error_quickly(b);
  EXPECT_EQ(count_open_fds(), before);
}

// A well-formed frame that announces no fd but carries one is rejected and the fd closed.
TEST(IpcRecv, UnannouncedFdIsRejectedAndClosed) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-leak", 64);
  ASSERT_TRUE(memfd.ok());
  const std::size_t before = count_open_fds();
  ASSERT_GT(send_raw(a.fd(), valid_frame(MsgType::data, 4, 0), {memfd->get()}), 0);
  expect_protocol_error_quickly(b);
  EXPECT_EQ(count_open_fds(), before);
}

// A frame that announces an fd but carries none is rejected.
TEST(IpcRecv, AnnouncedFdMissingIsRejected) {
  auto [a, b] = make_pair();
  ASSERT_GT(send_raw(a.fd(), valid_frame(MsgType::data, 4, 1)), 0);
  expect_protocol_error_quickly(b);
}

// Two fds where one is announced is rejected and both are closed.
TEST(IpcRecv, TwoFdsAreRejectedAndBothClosed) {
  auto [a, b] = make_pair();
  auto m1 = create_memfd("ipc-leak1", 64);
  auto m2 = create_memfd("ipc-leak2", 64);
  ASSERT_TRUE(m1.ok() && m2.ok());
  const std::size_t before = count_open_fds();
  ASSERT_GT(send_raw(a.fd(), valid_frame(MsgType::data, 0, 1), {m1->get(), m2->get()}), 0);
  expect_protocol_error_quickly(b);
  EXPECT_EQ(count_open_fds(), before);
}

// More fds than the receive buffer has room for is rejected and none of them stays open.
TEST(IpcRecv, ManyFdsAreRejectedAndAllClosed) {
  auto [a, b] = make_pair();
  auto memfd = create_memfd("ipc-many", 64);
  ASSERT_TRUE(memfd.ok());
  const std::size_t before = count_open_fds();
  std::vector<int> fds(20, memfd->get());
  ASSERT_GT(send_raw(a.fd(), valid_frame(MsgType::data, 0, 1), fds), 0);
  expect_protocol_error_quickly(b);
  EXPECT_EQ(count_open_fds(), before);
}

// A zero-length datagram gives a protocol error, promptly.
// SOCK_SEQPACKET's recvmsg returns 0 for an empty datagram as for a closed
// peer: it is rejected at once, as peer_closed, and the conversation ends.
TEST(IpcRecv, EmptyDatagramIsRejectedAsPeerClosed) {
  auto [a, b] = make_pair();
  ASSERT_EQ(::send(a.fd(), "", 0, MSG_NOSIGNAL), 0);
  const auto start = Clock::now();
  auto r = b.recv(kRecvTimeoutMs);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  ASSERT_FALSE(r.ok()) << "an empty datagram was accepted";
  EXPECT_EQ(r.error().kind, ErrorKind::peer_closed) << r.error().message();
  EXPECT_LT(ms, kRecvTimeoutMs / 2) << "recv waited instead of rejecting the datagram";
}

// When the peer closes its end, recv reports kind peer_closed ("peer closed the
// socket"), what the parent branches on; a leg shows it as "protocol", as before.
TEST(IpcRecv, PeerCloseIsPeerClosed) {
  auto [a, b] = make_pair();
  a.owned_fd().reset();
  auto r = b.recv(kRecvTimeoutMs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::peer_closed);
  EXPECT_EQ(r.error().detail, "peer closed the socket");
  EXPECT_EQ(r.error().message(), "recv frame: (peer closed the socket)");
  EXPECT_EQ(r.error().shown_code(), "protocol");
}

// Frames sent before the peer closed are still delivered before the close is reported.
TEST(IpcRecv, FramesBeforeCloseAreDelivered) {
  auto [a, b] = make_pair();
  ASSERT_TRUE(a.send(MsgType::report, "last words").ok());
  a.owned_fd().reset();
  EXPECT_EQ(recv_ok(b).payload, "last words");
  auto r = b.recv(kRecvTimeoutMs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::peer_closed);
}

// With nothing to read, recv gives ErrorKind::timeout after about the timeout.
TEST(IpcRecv, TimeoutWhenNothingArrives) {
  auto [a, b] = make_pair();
  const auto start = Clock::now();
  auto r = b.recv(100);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::timeout);
  EXPECT_GE(ms, 90);
  EXPECT_LT(ms, 1500);
}

// send to a closed peer fails with an os error naming EPIPE, and does not raise SIGPIPE.
TEST(IpcSend, ClosedPeerGivesEpipe) {
  auto [a, b] = make_pair();
  b.owned_fd().reset();
  auto s = a.send(MsgType::step, "anyone?");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::os);
  EXPECT_EQ(s.error().step, "sendmsg");
  EXPECT_NE(s.error().code.find("EPIPE"), std::string::npos) << s.error().code;
}

// The sockets of a pair are close-on-exec (only explicitly inherited fds reach a child).
TEST(IpcChannel, PairIsCloexec) {
  auto [a, b] = make_pair();
  EXPECT_NE(::fcntl(a.fd(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_NE(::fcntl(b.fd(), F_GETFD) & FD_CLOEXEC, 0);
}

}  // namespace
