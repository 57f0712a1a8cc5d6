// The pidfd fd transport of os::Channel (include/extmem/os/ipc.h): the number
// crosses, the receiver fetches with pidfd_getfd, the sender keeps the fd until
// the ack; a refused fetch reaches both ends with its step and errno, and the
// frames stay in step.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <string>

#include "extmem/os/fd.h"
#include "extmem/os/ipc.h"

namespace {

using extmem::ErrorKind;
using extmem::os::Channel;
using extmem::os::FdTransport;
using extmem::os::Frame;
using extmem::os::MsgType;
namespace os = extmem::os;

constexpr int kTimeoutMs = 5000;

std::pair<Channel, Channel> pidfd_pair() {
  auto p = Channel::pair();
  EXPECT_TRUE(p.ok());
  p->first.set_fd_transport(FdTransport::pidfd);
  p->second.set_fd_transport(FdTransport::pidfd);
  return std::move(*p);
}

// The fd arrives as a fetched duplicate of the same file, with the frame's type
// and payload; both ends count it; nothing is refused.
TEST(IpcPidfd, FdArrivesFetched) {
  auto ends = pidfd_pair();  // named ends, not structured bindings: clang 14 cannot capture those
  Channel& a = ends.first;
  Channel& b = ends.second;
  auto memfd = os::create_memfd("ipc-pidfd", 4096);
  ASSERT_TRUE(memfd.ok());
  // send() waits for the ack, so the receiving end runs beside it.
  auto received = std::async(std::launch::async, [&b] { return b.recv(kTimeoutMs); });
  ASSERT_TRUE(a.send(MsgType::request, "setup", memfd->get(), kTimeoutMs).ok());
  auto f = received.get();
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->type, MsgType::request);
  EXPECT_EQ(f->payload, "setup");
  ASSERT_TRUE(f->fd.valid());
  EXPECT_FALSE(f->fd_refused);
  struct stat sa {}, sb {};
  ASSERT_EQ(::fstat(f->fd.get(), &sa), 0);
  ASSERT_EQ(::fstat(memfd->get(), &sb), 0);
  EXPECT_EQ(sa.st_ino, sb.st_ino);
  EXPECT_EQ(a.log().crossed, 1u);
  EXPECT_EQ(b.log().crossed, 1u);
  EXPECT_FALSE(a.log().refused);
  EXPECT_FALSE(b.log().refused);
}

// A frame without an fd crosses as one plain frame, no offer.
TEST(IpcPidfd, FrameWithoutFdIsPlain) {
  auto [a, b] = pidfd_pair();
  ASSERT_TRUE(a.send(MsgType::reply, "no fd").ok());
  auto f = b.recv(kTimeoutMs);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->payload, "no fd");
  EXPECT_FALSE(f->fd.valid());
  EXPECT_EQ(b.log().crossed, 0u);
}

// A fetch that fails (here: the offered number is not open, EBADF) is not an
// error of either call: the frame arrives without an fd and with the refusal,
// the sender has the same step and code from the ack, and the next frame is
// the next one sent.
TEST(IpcPidfd, RefusalReachesBothEndsAndFramesStayInStep) {
  auto ends = pidfd_pair();
  Channel& a = ends.first;
  Channel& b = ends.second;
  auto received = std::async(std::launch::async, [&b] { return b.recv(kTimeoutMs); });
  ASSERT_TRUE(a.send(MsgType::request, "setup", 987654, kTimeoutMs).ok());
  auto f = received.get();
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->payload, "setup");
  EXPECT_FALSE(f->fd.valid());
  ASSERT_TRUE(f->fd_refused);
  const std::string step = "pidfd_getfd(pid " + std::to_string(::getpid()) + ", fd 987654)";
  EXPECT_EQ(f->fd_refused->step, step);
  EXPECT_EQ(f->fd_refused->code, "EBADF (9)");
  ASSERT_TRUE(a.log().refused);
  EXPECT_EQ(a.log().refused->step, step);
  EXPECT_EQ(a.log().refused->code, "EBADF (9)");
  EXPECT_EQ(a.log().refused->detail, "Bad file descriptor");
  // The errno crosses as a number too: the sender tells a resource limit from a
  // refusal by it (fd_fetch_hit_resource_limit), never by the code's text.
  EXPECT_TRUE(f->fd_refused->is_errno(EBADF));
  EXPECT_TRUE(a.log().refused->is_errno(EBADF));
  EXPECT_EQ(a.log().crossed, 0u);
  ASSERT_TRUE(a.send(MsgType::request, "next").ok());
  auto next = b.recv(kTimeoutMs);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->payload, "next");
}

// An offer on an end that passes fds by SCM_RIGHTS is a protocol error, not a fetch.
TEST(IpcPidfd, OfferOnScmChannelIsProtocolError) {
  auto p = Channel::pair();
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->first.send(MsgType::fd_offer, "pid 1 fd 0").ok());
  auto f = p->second.recv(kTimeoutMs);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::protocol);
  EXPECT_NE(f.error().detail.find("SCM_RIGHTS"), std::string::npos) << f.error().detail;
}

// A malformed offer is a protocol error naming what was expected.
TEST(IpcPidfd, MalformedOfferIsProtocolError) {
  auto [a, b] = pidfd_pair();
  ASSERT_TRUE(a.send(MsgType::fd_offer, "pid x fd 3").ok());
  auto f = b.recv(kTimeoutMs);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::protocol);
  EXPECT_NE(f.error().detail.find("pid <P> fd <N>"), std::string::npos) << f.error().detail;
}

// An ack nobody waits for is a protocol error.
TEST(IpcPidfd, StrayAckIsProtocolError) {
  auto [a, b] = pidfd_pair();
  ASSERT_TRUE(a.send(MsgType::fd_ack, "").ok());
  auto f = b.recv(kTimeoutMs);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::protocol);
}

// A receiver that goes away before acking ends the sender's wait with its error, not a hang.
TEST(IpcPidfd, ReceiverGoneEndsTheWait) {
  auto [a, b] = pidfd_pair();
  auto memfd = os::create_memfd("ipc-pidfd-gone", 4096);
  ASSERT_TRUE(memfd.ok());
  b.owned_fd().reset();
  auto s = a.send(MsgType::request, "setup", memfd->get(), kTimeoutMs);
  ASSERT_FALSE(s.ok());
}

}  // namespace
