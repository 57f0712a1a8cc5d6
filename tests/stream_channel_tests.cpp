// The stream form of os/ipc.h's frames and the tcp: endpoint (os/endpoint.h):
// real sockets (a Unix stream socketpair, TCP on loopback), no processes.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "extmem/os/endpoint.h"
#include "extmem/os/ipc.h"

namespace {

namespace os = extmem::os;
using extmem::ErrorKind;

std::pair<os::Channel, os::UniqueFd> stream_pair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return {os::Channel(os::UniqueFd(sv[0])), os::UniqueFd(sv[1])};
}

void write_all(int fd, const std::string& bytes) {
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

std::string header(os::MsgType type, std::uint32_t length, std::uint32_t fds = 0) {
  std::string h(os::kFrameHeaderSize, '\0');
  os::encode_frame_header(type, length, fds,
                          std::span<std::byte, os::kFrameHeaderSize>(reinterpret_cast<std::byte*>(h.data()), h.size()));
  return h;
}

TEST(StreamChannel, FramesCrossAStreamWholeIncludingTheLargestAndItCarriesNoFds) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const os::Channel a{os::UniqueFd(sv[0])}, b{os::UniqueFd(sv[1])};
  EXPECT_FALSE(a.carries_fds());
  auto seq = os::Channel::pair();
  ASSERT_TRUE(seq);
  EXPECT_TRUE(seq->first.carries_fds());

  const std::string big(os::kMaxPayload, 'x');
  // The largest frame is bigger than a stream's socket buffer takes at once: the writer
  // sends in pieces while the reader takes them.
  std::thread writer([&] {
    EXPECT_TRUE(a.send(os::MsgType::step, "first"));
    EXPECT_TRUE(a.send(os::MsgType::report, big));
    EXPECT_TRUE(a.send(os::MsgType::request, ""));
  });
  auto f1 = b.recv(5000), f2 = b.recv(5000), f3 = b.recv(5000);
  writer.join();
  ASSERT_TRUE(f1 && f2 && f3);
  EXPECT_EQ(f1->type, os::MsgType::step);
  EXPECT_EQ(f1->payload, "first");
  EXPECT_EQ(f2->payload, big);
  EXPECT_EQ(f3->type, os::MsgType::request);
  EXPECT_TRUE(f3->payload.empty());

  auto refused = a.send(os::MsgType::job, "{}", seq->first.fd());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::unsupported);
  EXPECT_EQ(b.recv(0).error().kind, ErrorKind::timeout) << "nothing of the refused frame was sent";
}

TEST(StreamChannel, AClosedStreamIsPeerClosedBetweenFramesAndTruncatedWithinOne) {
  {
    auto [reader, writer] = stream_pair();
    writer.reset();
    auto f = reader.recv(1000);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().kind, ErrorKind::peer_closed);
  }
  {
    auto [reader, writer] = stream_pair();
    write_all(writer.get(), header(os::MsgType::step, 10) + "abc");
    writer.reset();
    auto f = reader.recv(1000);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().kind, ErrorKind::protocol);
    EXPECT_NE(f.error().detail.find("3 of 10 payload bytes"), std::string::npos) << f.error().detail;
  }
}

TEST(StreamChannel, APeerGoneWithBytesUnreadIsPeerClosed) {
  // The peer closes with a frame it never read: a reset (ECONNRESET) rather than an end of file.
  auto [reader, writer] = stream_pair();
  ASSERT_TRUE(reader.send(os::MsgType::report, "never read"));
  writer.reset();
  auto f = reader.recv(1000);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().kind, ErrorKind::peer_closed) << f.error().message();
  EXPECT_TRUE(f.error().is_errno(ECONNRESET)) << f.error().message();
}

TEST(StreamChannel, AHeaderIsJudgedBeforeItsPayloadIsWaitedFor) {
  // Each is refused at once, though the writer stays open and sends no payload.
  auto [reader, writer] = stream_pair();
  write_all(writer.get(), header(os::MsgType::data, os::kMaxPayload + 1));
  auto over = reader.recv(1000);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().detail.find("over limit"), std::string::npos) << over.error().detail;

  auto [reader2, writer2] = stream_pair();
  write_all(writer2.get(), std::string("GET / HTTP/1.1\r\n"));
  auto garbage = reader2.recv(1000);
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().detail.find("bad magic"), std::string::npos) << garbage.error().detail;

  auto [reader3, writer3] = stream_pair();
  write_all(writer3.get(), header(os::MsgType::job, 2, 1) + "{}");
  auto with_fd = reader3.recv(1000);
  ASSERT_FALSE(with_fd);
  EXPECT_NE(with_fd.error().detail.find("frame says 1 fds, 0 arrived"), std::string::npos) << with_fd.error().detail;
}

TEST(TcpEndpoint, ParsesHostsAndPortsAndRefusesTheRest) {
  auto v4 = os::parse_endpoint("tcp:127.0.0.1:7000");
  ASSERT_TRUE(v4) << v4.error().message();
  EXPECT_EQ(v4->kind, os::Endpoint::Kind::tcp);
  EXPECT_EQ(v4->name, "127.0.0.1");
  EXPECT_EQ(v4->port, 7000);
  EXPECT_FALSE(v4->carries_fds());
  EXPECT_EQ(v4->text(), "tcp:127.0.0.1:7000");
  auto v6 = os::parse_endpoint("tcp:[::1]:0");
  ASSERT_TRUE(v6) << v6.error().message();
  EXPECT_EQ(v6->name, "::1");
  EXPECT_EQ(v6->text(), "tcp:[::1]:0");
  auto name = os::parse_endpoint("tcp:localhost:65535");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->port, 65535);
  for (const char* bad : {"tcp:", "tcp:127.0.0.1", "tcp:127.0.0.1:", "tcp:127.0.0.1:65536", "tcp:127.0.0.1:-1",
                          "tcp:127.0.0.1:80x", "tcp::80", "tcp:::1:80", "tcp:[nope]:80", "tcp:a b:80", "tcp:/tmp/x:80"}) {
    auto e = os::parse_endpoint(bad);
    ASSERT_FALSE(e) << bad;
    EXPECT_EQ(e.error().kind, ErrorKind::invalid_argument);
    EXPECT_NE(e.error().detail.find("accepted: tcp:HOST:PORT"), std::string::npos) << e.error().detail;
  }
}

TEST(TcpEndpoint, ListensOnLoopbackOnlyUnlessAskedAndNamesThePortItGot) {
  auto any = os::parse_endpoint("tcp:0.0.0.0:0");
  ASSERT_TRUE(any);
  auto refused = os::Listener::listen(*any);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::invalid_argument);
  EXPECT_NE(refused.error().detail.find("not a loopback address"), std::string::npos) << refused.error().detail;
  auto wide = os::Listener::listen(*any, std::nullopt, true);
  ASSERT_TRUE(wide) << wide.error().message();
  EXPECT_NE(wide->endpoint().port, 0);

  auto unknown = os::parse_endpoint("tcp:no-such-host.invalid:80");
  ASSERT_TRUE(unknown);
  auto none = os::connect_endpoint(*unknown);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::invalid_argument);
  EXPECT_NE(none.error().detail.find("does not resolve"), std::string::npos) << none.error().detail;
}

TEST(TcpEndpoint, AcceptIdentifiesALoopbackPeersUserAndFramesCross) {
  auto l = os::Listener::listen(*os::parse_endpoint("tcp:127.0.0.1:0"));
  ASSERT_TRUE(l) << l.error().message();
  const os::Endpoint at = l->endpoint();
  ASSERT_NE(at.port, 0);
  auto client = os::connect_endpoint(at);
  ASSERT_TRUE(client) << client.error().message();
  auto conn = l->accept(5000);
  ASSERT_TRUE(conn) << conn.error().message();
  const os::PeerCredentials& who = conn->second;
  EXPECT_TRUE(who.identified) << "a loopback peer is in /proc/net/tcp";
  EXPECT_EQ(who.uid, ::getuid());
  EXPECT_EQ(who.pid, 0) << "TCP names no pid";
  EXPECT_EQ(who.address.rfind("127.0.0.1:", 0), 0u) << who.address;
  EXPECT_FALSE(conn->first.carries_fds());
  ASSERT_TRUE(client->send(os::MsgType::request, "hello"));
  auto f = conn->first.recv(5000);
  ASSERT_TRUE(f) << f.error().message();
  EXPECT_EQ(f->payload, "hello");

  l = os::Listener::listen(*os::parse_endpoint("tcp:127.0.0.2:0"));  // the first closes: nobody listens at `at`
  auto gone = os::connect_endpoint(at);
  ASSERT_FALSE(gone);
  EXPECT_TRUE(gone.error().is_errno(ECONNREFUSED)) << gone.error().message();
}

}  // namespace
