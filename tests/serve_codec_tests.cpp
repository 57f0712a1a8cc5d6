// The session protocol of extmem probe serve / --peer, its endpoints and the
// boundary comparison: pure functions, no processes.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "extmem/os/endpoint.h"
#include "extmem/probe/boundary.h"
#include "probe/serve/session_codec.h"

namespace {

using nlohmann::json;
namespace probe = extmem::probe;
namespace os = extmem::os;

probe::SideContext sample_context() {
  probe::SideContext c;
  c.uid = 1000;
  c.gid = 100;
  c.pid = 4242;
  c.namespaces = {{"ipc", "ipc:[4026531839]"}, {"net", "net:[4026531840]"}, {"pid", "pid:[4026531836]"}};
  c.cgroup = "0::/user.slice";
  c.security_label = "none";
  c.dev_shm = "0:1a:1";
  c.hostname = "node1";
  return c;
}

TEST(SessionCodec, HelloAndWelcomeRoundTrip) {
  const probe::Hello h{probe::kServeProtocol, "0.1.0", "0123456789abcdef", sample_context()};
  auto back = probe::decode_hello(probe::encode_hello(h));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, h);
  const probe::Welcome w{probe::kServeProtocol, "0.1.0", probe::Role::client, 1 << 20, sample_context()};
  auto wback = probe::decode_welcome(probe::encode_welcome(w));
  ASSERT_TRUE(wback) << wback.error().message();
  EXPECT_EQ(*wback, w);
}

TEST(SessionCodec, EventsRoundTrip) {
  probe::SessionEvent refused{.refused = probe::SessionRefusal{probe::Refusal::too_large, "131072 bytes is above"}};
  auto r = probe::decode_event(probe::encode_event(refused));
  ASSERT_TRUE(r && r->refused);
  EXPECT_EQ(*r->refused, *refused.refused);
  probe::SessionEvent ended{.half_ended = extmem::os::ExitInfo{false, 0, true, 9}};
  auto e = probe::decode_event(probe::encode_event(ended));
  ASSERT_TRUE(e && e->half_ended);
  EXPECT_TRUE(e->half_ended->signaled);
  EXPECT_EQ(e->half_ended->signal, 9);
  auto a = probe::decode_event(probe::encode_event(probe::SessionEvent{.abandon = true}));
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->abandon);
}

TEST(SessionCodec, RefusesWhatItsEncoderDoesNotWrite) {
  const probe::Hello h{probe::kServeProtocol, "0.1.0", "0123456789abcdef", sample_context()};
  const json good = json::parse(probe::encode_hello(h));
  auto refused = [](const json& j) { return !probe::decode_hello(j.dump()); };
  json extra = good;
  extra["command"] = "rm -rf /";
  EXPECT_TRUE(refused(extra)) << "an unknown member";
  json missing = good;
  missing.erase("context");
  EXPECT_TRUE(refused(missing));
  json wrapped = good;
  wrapped["context"]["uid"] = -1;
  EXPECT_TRUE(refused(wrapped)) << "a uid outside uint32";
  json fraction = good;
  fraction["context"]["pid"] = 1.5;
  EXPECT_TRUE(refused(fraction));
  json run_id = good;
  run_id["run_id"] = "../../etc/passwd";
  EXPECT_TRUE(refused(run_id));
  EXPECT_FALSE(probe::decode_hello("not json"));
  EXPECT_FALSE(probe::decode_hello("[1,2]"));
  EXPECT_FALSE(probe::decode_hello(std::string(probe::kMaxSessionMessage + 1, ' ')));
  EXPECT_FALSE(probe::decode_event(R"({"refused":{"reason":"because","detail":""}})")) << "a reason this build does not name";
  EXPECT_FALSE(probe::decode_event(R"({"abandon":false})"));
  EXPECT_FALSE(probe::decode_event(R"({"abandon":true,"half_ended":{"exited":true,"code":0,"signaled":false,"signal":0}})"));
  auto e = probe::decode_hello(extra.dump());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind, extmem::ErrorKind::protocol);
  EXPECT_EQ(e.error().step, "decode hello");
}

TEST(SessionCodec, RouteTokenAndRouteHelloAreStrict) {
  probe::Welcome w{probe::kServeProtocol, "0.1.0", probe::Role::server, 1 << 20, sample_context()};
  EXPECT_EQ(json::parse(probe::encode_welcome(w)).count("route_token"), 0u) << "a session that carries fds has none";
  w.route_token = probe::new_route_token();
  auto back = probe::decode_welcome(probe::encode_welcome(w));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->route_token, w.route_token);
  json bad = json::parse(probe::encode_welcome(w));
  bad["route_token"] = "abc";
  EXPECT_FALSE(probe::decode_welcome(bad.dump()));

  const probe::RouteHello r{"0123456789abcdef", w.route_token};
  auto hello = probe::decode_route_hello(probe::encode_route_hello(r));
  ASSERT_TRUE(hello) << hello.error().message();
  EXPECT_EQ(*hello, r);
  json extra = json::parse(probe::encode_route_hello(r));
  extra["route"]["row"] = "T1-cuda-ipc";
  auto e = probe::decode_route_hello(extra.dump());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().step, "decode route hello");
  json upper = json::parse(probe::encode_route_hello(r));
  upper["route"]["token"] = std::string(32, 'A');
  EXPECT_FALSE(probe::decode_route_hello(upper.dump()));
  EXPECT_NE(probe::new_route_token(), probe::new_route_token());
}

TEST(SessionCodec, RunIdsAreSixteenHexDigitsAndDiffer) {
  const std::string a = probe::new_run_id(), b = probe::new_run_id();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(Endpoint, ParsesPathsAndAbstractNamesAndRefusesTheRest) {
  auto p = os::parse_endpoint("/run/extmem/sock");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, os::Endpoint::Kind::path);
  auto a = os::parse_endpoint("@extmem-serve");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, os::Endpoint::Kind::abstract);
  EXPECT_EQ(a->name, "extmem-serve");
  EXPECT_EQ(a->text(), "@extmem-serve");
  for (const std::string bad : {std::string(), std::string("@"), std::string(108, 'x')}) {
    auto e = os::parse_endpoint(bad);
    ASSERT_FALSE(e) << bad;
    EXPECT_EQ(e.error().kind, extmem::ErrorKind::invalid_argument);
    EXPECT_NE(e.error().detail.find("accepted: a socket path or @NAME"), std::string::npos) << e.error().detail;
  }
}

TEST(Endpoint, ListenerRefusesASecondServerAndReplacesAStaleSocket) {
  char tmpl[] = "/tmp/extmem-endpoint-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/sock";
  {
    auto first = os::Listener::listen(*os::parse_endpoint(path));
    ASSERT_TRUE(first) << first.error().message();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << "the socket file is the owner's only";
    auto second = os::Listener::listen(*os::parse_endpoint(path));
    ASSERT_FALSE(second);
    EXPECT_TRUE(second.error().is_errno(EADDRINUSE)) << second.error().message();
    auto client = os::connect_endpoint(*os::parse_endpoint(path));
    ASSERT_TRUE(client);
    auto conn = first->accept(1000);
    ASSERT_TRUE(conn) << conn.error().message();
    EXPECT_EQ(conn->second.uid, ::getuid());
    EXPECT_EQ(conn->second.pid, ::getpid());
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the listener removes its socket file";
  {  // a socket file nobody listens on (its server died) is replaced
    auto dead = os::Listener::listen(*os::parse_endpoint(path));
    ASSERT_TRUE(dead);
    const int fd = ::dup(dead->fd());
    ASSERT_GE(fd, 0);
    std::string name = path + ".kept";
    ASSERT_EQ(::link(path.c_str(), name.c_str()), 0);  // keep the file past the listener's removal
    *dead = std::move(*os::Listener::listen(*os::parse_endpoint(std::string(tmpl) + "/other")));
    ::close(fd);  // nobody listens at `name` now
    ASSERT_EQ(::rename(name.c_str(), path.c_str()), 0);
    auto again = os::Listener::listen(*os::parse_endpoint(path));
    ASSERT_TRUE(again) << again.error().message();
  }
  ::unlink(path.c_str());
  ::rmdir(tmpl);
}

TEST(Endpoint, ASocketOfAnotherKindAtThePathIsLeftAlone) {
  char tmpl[] = "/tmp/extmem-endpoint-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/sock";
  const int other = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  // another program's listening stream socket
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(other, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(other, 1), 0);
  auto ours = os::Listener::listen(*os::parse_endpoint(path));
  ASSERT_FALSE(ours);
  EXPECT_TRUE(ours.error().is_errno(EADDRINUSE)) << ours.error().message();
  EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "its socket file must stay";
  ::close(other);
  ::unlink(path.c_str());
  ::rmdir(tmpl);
}

TEST(Boundary, ComparesEveryFactAndNamesIt) {
  const probe::SideContext here = sample_context();
  EXPECT_TRUE(probe::compare_sides(here, here).empty());
  probe::SideContext peer = here;
  peer.uid = 65534;
  peer.namespaces[2].second = "pid:[4026532000]";
  peer.dev_shm = "0:2b:1";
  const auto facts = probe::compare_sides(here, peer);
  ASSERT_EQ(facts.size(), 3u);
  EXPECT_EQ(facts[0].fact, "uid");
  EXPECT_EQ(facts[1].fact, "ns:pid");
  EXPECT_NE(facts[1].text.find("another PID namespace"), std::string::npos);
  EXPECT_EQ(facts[2].fact, "dev_shm");
  EXPECT_TRUE(probe::differs(facts, "ns:pid"));
  EXPECT_FALSE(probe::differs(facts, "ns:ipc"));
}

TEST(Boundary, ReadsThisProcess) {
  const probe::SideContext c = probe::read_side_context();
  EXPECT_EQ(c.pid, ::getpid());
  EXPECT_EQ(c.uid, ::getuid());
  EXPECT_FALSE(c.namespaces.empty());
  EXPECT_FALSE(c.hostname.empty());
}

}  // namespace
