// extmem probe serve and --peer on lavapipe, real processes (docs/serve.md):
// the same verdicts across a path endpoint as in one tree, peers the server must
// refuse (each in its own words, the server serving on), halves that die or
// peers that vanish mid-route, and no fd growth over twenty sessions.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "extmem/os/endpoint.h"
#include "extmem/os/ipc.h"
#include "extmem/probe/boundary.h"
#include "probe/job_codec.h"
#include "probe/serve/session_codec.h"
#include "support/run_shell.h"
#include "support/serve_process.h"
#include "support/shared_run.h"
#include "support/temp_files.h"

namespace {

using nlohmann::json;
namespace probe = extmem::probe;
namespace os = extmem::os;
using extmem::test::run_extmem;
using extmem::test::ServeProcess;
using extmem::test::ShellRun;

// Row -> status of a --json document.
std::map<std::string, std::string> statuses(const std::string& path) {
  std::map<std::string, std::string> out;
  const json doc = json::parse(extmem::test::slurp(path), nullptr, false);
  if (doc.is_discarded()) return out;
  for (const json& r : doc["rows"]) out[r["row"].get<std::string>()] = r["status"].get<std::string>();
  return out;
}

// The RESULT line of `row` in a run's text, or "".
std::string result_line(const std::string& out, const std::string& row) {
  const std::string head = "RESULT " + row + " ";
  const std::size_t at = out.find(head);
  return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
}

// Files under /proc/PID/fd.
std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// A raw peer: connects, sends what a test makes, reads the one reply.
struct RawPeer {
  os::Channel c;
  explicit RawPeer(const std::string& endpoint) {
    auto ch = os::connect_endpoint(*os::parse_endpoint(endpoint));
    if (ch) c = std::move(*ch);
  }
  // The refusal the server answers with, or nullopt (it answered something else or closed).
  std::optional<probe::SessionRefusal> refusal() {
    for (;;) {
      auto f = c.recv(60000);
      if (!f) return std::nullopt;
      if (f->type != os::MsgType::reply) continue;
      auto e = probe::decode_event(f->payload);
      if (e && e->refused) return e->refused;
      if (!e) continue;  // the welcome
    }
  }
  bool hello() {
    const probe::Hello h{probe::kServeProtocol, "0.0.0", probe::new_run_id(), probe::read_side_context()};
    if (!c.send(os::MsgType::request, probe::encode_hello(h))) return false;
    auto welcome = c.recv(60000);
    auto phase_a = c.recv(60000);
    return welcome && welcome->type == os::MsgType::reply && phase_a && phase_a->type == os::MsgType::findings;
  }
};

// --- cell (b): serve and --peer launched separately, same uid -------------------

TEST(ServeRun, EveryRowAcrossAPathEndpointAnswersAsInOneTree) {
  const std::string single = extmem::test::shared_run_dir("serve-single-tree", [](const std::string& dir) {
    (void)run_extmem("probe --json=" + dir + "/r.json");
  });
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=1 --json=" + server.dir.file("serve.json"))) << server.output();
  const ShellRun peer = run_extmem("probe --peer=" + server.endpoint() + " --json=" + server.dir.file("peer.json"));
  EXPECT_EQ(peer.code, 0) << peer.out;
  const auto here = statuses(single + "/r.json"), across = statuses(server.dir.file("peer.json"));
  ASSERT_FALSE(here.empty());
  EXPECT_EQ(across, here) << peer.out;
  EXPECT_EQ(server.finish(60).code, 0) << server.output();
  // Both documents carry the run id; the driving side's names the (empty) boundary.
  const json doc = json::parse(extmem::test::slurp(server.dir.file("peer.json")));
  const json served = json::parse(extmem::test::slurp(server.dir.file("serve.json")));
  EXPECT_EQ(doc["peer"]["run_id"], served["sessions"][0]["run_id"]);
  EXPECT_TRUE(doc["peer"]["boundary"].empty()) << doc["peer"].dump();
  EXPECT_EQ(served["sessions"][0]["peer"]["uid"], ::getuid());
  EXPECT_NE(peer.out.find("boundary: none"), std::string::npos) << peer.out;
  // extmem report joins the two sides by the run id.
  const std::string run_id = doc["peer"]["run_id"];
  const ShellRun merged = run_extmem("report " + server.dir.file("peer.json") + " " + server.dir.file("serve.json"));
  EXPECT_EQ(merged.code, 0) << merged.out;
  EXPECT_NE(merged.out.find("Across a boundary"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("run " + run_id + ", the serving side ran the server halves; boundary: none; served by serve.json"),
            std::string::npos) << merged.out;
  const ShellRun alone = run_extmem("report " + server.dir.file("serve.json"));
  EXPECT_EQ(alone.code, 2) << alone.out;
  const ShellRun unjoined = run_extmem("report " + single + "/r.json " + server.dir.file("serve.json"));
  EXPECT_NE(unjoined.out.find("its driving side's document was not given"), std::string::npos) << unjoined.out;
}

// --- a service safe to leave running ---------------------------------------

TEST(ServeRun, RefusedPeersEachGetTheirReasonAndTheServerServesOn) {
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=3 --max-size=65536 --allow-group=65534")) << server.output();
  {  // garbage: not a frame at all
    RawPeer p(server.endpoint());
    const char junk[] = "GET / HTTP/1.0\r\n\r\n";
    ASSERT_EQ(::send(p.c.fd(), junk, sizeof junk, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof junk));
    auto r = p.refusal();
    ASSERT_TRUE(r) << server.output();
    EXPECT_EQ(r->reason, probe::Refusal::malformed);
    EXPECT_NE(r->detail.find("decode frame"), std::string::npos) << r->detail;
  }
  {  // a frame larger than any the protocol allows
    RawPeer p(server.endpoint());
    std::string big(os::kFrameHeaderSize + os::kMaxPayload + 100, 'x');
    ASSERT_GT(::send(p.c.fd(), big.data(), big.size(), MSG_NOSIGNAL), 0);
    auto r = p.refusal();
    ASSERT_TRUE(r) << server.output();
    EXPECT_EQ(r->reason, probe::Refusal::malformed);
  }
  {  // another protocol version
    RawPeer p(server.endpoint());
    json hello = json::parse(probe::encode_hello({probe::kServeProtocol, "9.9.9", probe::new_run_id(), probe::read_side_context()}));
    hello["protocol"] = probe::kServeProtocol + 1;
    ASSERT_TRUE(p.c.send(os::MsgType::request, hello.dump()));
    auto r = p.refusal();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->reason, probe::Refusal::protocol_version);
    EXPECT_NE(r->detail.find("accepted: 1"), std::string::npos) << r->detail;
  }
  {  // a job above --max-size (a session: its hello was good)
    RawPeer p(server.endpoint());
    ASSERT_TRUE(p.hello());
    probe::HalfParams job;
    job.row = "T3-memfd-cross-process";
    job.layout.size = 131072;
    auto pair = os::Channel::pair();
    ASSERT_TRUE(p.c.send(os::MsgType::job, probe::encode_job(job), pair->first.fd()));
    auto r = p.refusal();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->reason, probe::Refusal::too_large);
    EXPECT_NE(r->detail.find("--max-size=65536"), std::string::npos) << r->detail;
  }
  {  // a job for the half this server does not run
    RawPeer p(server.endpoint());
    ASSERT_TRUE(p.hello());
    probe::HalfParams job;
    job.row = "T3-memfd-cross-process";
    job.role = probe::Role::client;
    auto pair = os::Channel::pair();
    ASSERT_TRUE(p.c.send(os::MsgType::job, probe::encode_job(job), pair->first.fd()));
    auto r = p.refusal();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->reason, probe::Refusal::wrong_role);
  }
  if (::geteuid() == 0) {  // a uid the server does not serve: the socket is reachable (group 65534), the uid is not allowed
    const pid_t child = ::fork();
    if (child == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
      RawPeer p(server.endpoint());
      auto r = p.refusal();
      ::_exit(r && r->reason == probe::Refusal::not_allowed && r->detail.find("uid 65534") != std::string::npos ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << server.output();
  }
  // And then a real peer is served, as the third session.
  const ShellRun peer = run_extmem("probe --only=T3-memfd-cross-process --peer=" + server.endpoint());
  EXPECT_EQ(peer.code, 0) << peer.out;
  EXPECT_NE(result_line(peer.out, "T3-memfd-cross-process").find(" OK "), std::string::npos) << peer.out;
  EXPECT_EQ(server.finish(60).code, 0) << server.output();
  const std::string log = server.output();
  for (const char* said : {"refused: uid", "malformed", "protocol_version", "too_large", "wrong_role", "session 3:"})
    EXPECT_NE(log.find(said), std::string::npos) << said << "\n" << log;
  if (::geteuid() == 0) EXPECT_NE(log.find("not_allowed"), std::string::npos) << log;
}

TEST(ServeRun, ASecondServerOnTheSameEndpointIsRefused) {
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=1")) << server.output();
  const ShellRun second = run_extmem("probe serve --endpoint=" + server.endpoint());
  EXPECT_EQ(second.code, 3) << second.out;
  EXPECT_NE(second.out.find("EADDRINUSE"), std::string::npos) << second.out;
}

TEST(ServeRun, BadOptionsAreUsageErrors) {
  for (const std::string& args : {std::string("probe serve"), std::string("probe serve --endpoint=tcp:127.0.0.1:65536"),
                                  std::string("probe serve --endpoint=@x --listen-any"),
                                  std::string("probe serve --endpoint=tcp:127.0.0.1:0 --allow-group=0"),
                                  std::string("probe serve --endpoint=tcp:0.0.0.0:0"),
                                  std::string("probe serve --endpoint=@x --max-size=1000"),
                                  std::string("probe serve --endpoint=@x --max-size=0"),
                                  std::string("probe serve --endpoint=@x --allow-group=0"),
                                  std::string("probe serve --endpoint=@x --allow-group=no-such-group-here"),
                                  std::string("probe --peer=@"), std::string("probe --peer=@x --isolate=route")}) {
    const ShellRun r = run_extmem(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  }
  const ShellRun nobody = run_extmem("probe --peer=/nonexistent/extmem.sock");
  EXPECT_EQ(nobody.code, 3) << nobody.out;
  EXPECT_NE(nobody.out.find("ENOENT"), std::string::npos) << nobody.out;
}

// --- tcp: endpoints: bytes only ---------------------------------------------------

// Rows whose halves hand each other fds (--list-routes=json: a row with an @pidfd twin).
std::set<std::string> rows_passing_fds() {
  std::set<std::string> out;
  const json routes = json::parse(run_extmem("probe --list-routes=json").out, nullptr, false);
  for (const json& r : routes["routes"])
    if (r["pidfd_twin"].get<bool>()) out.insert(r["row"].get<std::string>());
  return out;
}

TEST(ServeRun, OverTcpRowsThatHandFdsAreUnsupportedAndTheRestAnswerAsInOneTree) {
  const std::string single = extmem::test::shared_run_dir("serve-single-tree", [](const std::string& dir) {
    (void)run_extmem("probe --json=" + dir + "/r.json");
  });
  ServeProcess server;
  server.at = "tcp:127.0.0.1:0";
  ASSERT_TRUE(server.start("--sessions=1 --json=" + server.dir.file("serve.json"))) << server.output();
  const std::string at = server.serving_on();
  ASSERT_EQ(at.rfind("tcp:127.0.0.1:", 0), 0u) << server.output();
  ASSERT_NE(at, "tcp:127.0.0.1:0") << "the line names the port the kernel chose";
  const ShellRun peer = run_extmem("probe --peer=" + at + " --json=" + server.dir.file("peer.json"));
  EXPECT_EQ(peer.code, 0) << peer.out;
  const auto here = statuses(single + "/r.json"), across = statuses(server.dir.file("peer.json"));
  const std::set<std::string> passing = rows_passing_fds();
  ASSERT_FALSE(here.empty());
  ASSERT_FALSE(passing.empty());
  ASSERT_EQ(across.size(), here.size()) << peer.out;
  for (const auto& [row, status] : here) {
    const std::string line = result_line(peer.out, row);
    // A row phase A already decided (SKIP, or UNSUPPORTED for a missing extension) keeps that answer.
    if (passing.count(row) != 0 && status != "SKIP" && status != "UNSUPPORTED") {
      EXPECT_EQ(across.at(row), "UNSUPPORTED") << line;
      EXPECT_NE(line.find("the endpoint " + at + " carries bytes, never fds"), std::string::npos) << line;
    } else {
      EXPECT_EQ(across.at(row), status) << line;
    }
  }
  EXPECT_EQ(server.finish(60).code, 0) << server.output();
  // The serving side ran the halves of the rows that need no fd, two-process ones over
  // their own route connection (T5-ucx-rma where UCX is installed).
  const json served = json::parse(extmem::test::slurp(server.dir.file("serve.json")));
  const json& session = served["sessions"][0];
  EXPECT_EQ(session["peer"]["uid"], ::getuid()) << "a loopback peer is identified";
  EXPECT_EQ(session["peer"]["address"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << session.dump();
  std::set<std::string> ran;
  for (const json& h : session["halves"]) {
    EXPECT_EQ(h["ended"], "done") << h.dump();
    ran.insert(h["row"].get<std::string>());
  }
  for (const std::string& row : ran) EXPECT_EQ(passing.count(row), 0u) << row << " hands fds: it must not have run";
  if (here.at("T5-ucx-rma") == "OK") EXPECT_EQ(ran.count("T5-ucx-rma"), 1u) << session.dump();
  EXPECT_EQ(ran.count("T1-opaque-fd-foreign-fd"), 1u) << "a single-process row runs on the serving side: " << session.dump();
}

TEST(ServeRun, OverTcpAForeignRouteConnectionAndAnotherUidAreRefused) {
  ServeProcess server;
  server.at = "tcp:127.0.0.1:0";
  ASSERT_TRUE(server.start("--sessions=1")) << server.output();
  const std::string at = server.serving_on();
  // A connection that claims a route of a session nobody opened: refused, not a session.
  {
    RawPeer stray(at);
    const probe::RouteHello forged{probe::new_run_id(), probe::new_route_token()};
    ASSERT_TRUE(stray.c.send(os::MsgType::request, probe::encode_route_hello(forged)));
    auto r = stray.refusal();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->reason, probe::Refusal::malformed) << r->detail;
  }
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups " + std::string(EXTMEM_BINARY);
  if (::geteuid() == 0 && extmem::test::run_shell(as_nobody + " --version").code == 0) {
    // Another uid on loopback is named by /proc/net/tcp, though TCP has no SO_PEERCRED.
    const ShellRun other = extmem::test::run_shell(as_nobody + " probe --only=T5-ucx-rma --peer=" + at);
    EXPECT_EQ(other.code, 3) << other.out;
    EXPECT_NE(other.out.find("not_allowed"), std::string::npos) << other.out;
    EXPECT_NE(other.out.find("uid 65534 may not use this server"), std::string::npos) << other.out;
  }
  // The server served on: a session of its own uid still runs.
  const ShellRun peer = run_extmem("probe --only=T1-opaque-fd-foreign-fd,T1-opaque-fd --peer=" + at);
  EXPECT_EQ(peer.code, 0) << peer.out;
  EXPECT_NE(result_line(peer.out, "T1-opaque-fd").find("UNSUPPORTED"), std::string::npos) << peer.out;
  EXPECT_EQ(server.finish(60).code, 0) << server.output();
  EXPECT_NE(server.output().find("refused: uid " + std::to_string(::getuid()) + " at 127.0.0.1:"), std::string::npos) << server.output();
}

// --- a half or a peer that goes away mid-route ------------------------------------

TEST(ServeRun, AServingHalfThatDiesFailsItsRowAndTheSessionGoesOn) {
  ServeProcess server;
  // abort, not segv: a sanitizer's SIGSEGV handler would turn the crash into exit 1.
  ASSERT_TRUE(server.start("--sessions=1", "EXTMEM_TEST_FAULT=T3-memfd-cross-process:server:mmap:abort")) << server.output();
  const ShellRun peer = run_extmem("probe --only=T3-memfd-cross-process,T3-memfd-sealed --peer=" + server.endpoint());
  EXPECT_EQ(peer.code, 1) << peer.out;
  const std::string died = result_line(peer.out, "T3-memfd-cross-process");
  EXPECT_NE(died.find(" FAIL "), std::string::npos) << peer.out;
  EXPECT_NE(died.find("SIGABRT in server"), std::string::npos) << died;
  EXPECT_NE(result_line(peer.out, "T3-memfd-sealed").find(" OK "), std::string::npos) << peer.out;
  EXPECT_EQ(server.finish(60).code, 0) << server.output();
}

TEST(ServeRun, ADrivingPeerKilledMidRouteEndsItsSessionAndTheNextIsServed) {
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=2")) << server.output();
  // The driving side's half hangs; its whole process group is killed while the serving half waits on it.
  extmem::test::TempDir dir;
  const std::string cmd = "setsid env EXTMEM_TEST_FAULT=T3-memfd-cross-process:client:mmap:hang " +
                          std::string(EXTMEM_BINARY) + " probe --only=T3-memfd-cross-process --peer=" +
                          server.endpoint() + " >" + dir.file("peer.out") + " 2>&1 & echo $!";
  const ShellRun started = extmem::test::run_shell(cmd);
  const pid_t pgid = std::stoi(started.out);
  for (int i = 0; i < 600 && extmem::test::slurp(dir.path / "peer.out").find("== routes") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_EQ(::kill(-pgid, SIGKILL), 0);
  ASSERT_TRUE(server.wait_for("session 1:", 60)) << server.output();
  // Which of the dead peer's sockets the server hears of first is the kernel's order
  // of closing them: the session's (its half is killed mid-route), or the route's (the
  // half ends, and its last frames reach a session nobody reads: a reset). Either way
  // the session ends naming the peer's going away, never as a refusal.
  const std::string out = server.output(), session = out.substr(out.find("session 1:"));
  const std::string line = session.substr(0, session.find('\n'));
  EXPECT_TRUE(line.find(", ended: killed: the driving side went away mid-route") != std::string::npos ||
              line.find(", ended: the driving side went away with frames unread") != std::string::npos)
      << out;
  EXPECT_EQ(line.find("refused"), std::string::npos) << out;
  const ShellRun next = run_extmem("probe --only=T3-memfd-cross-process --peer=" + server.endpoint());
  EXPECT_EQ(next.code, 0) << next.out;
  EXPECT_EQ(server.finish(60).code, 0) << server.output();
}

TEST(ServeRun, AServerKilledMidRouteFailsThatRowNamingTheDisconnect) {
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=1", "EXTMEM_TEST_FAULT=T3-memfd-cross-process:server:mmap:hang")) << server.output();
  const pid_t serve_pid = server.child.pid();
  std::thread killer([serve_pid] {
    // Mid-route: the server's worker runs the serving half (named extmem-server), which hangs in its mmap step.
    const std::string find = "pgrep -x -P " + std::to_string(serve_pid) + " extmem-server";
    ShellRun worker;
    for (int i = 0; i < 600 && (worker = extmem::test::run_shell(find)).code != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(serve_pid, SIGKILL);
    if (worker.code == 0) ::kill(std::stoi(worker.out), SIGKILL);  // hung in the fault: it would outlive its server
  });
  const ShellRun peer = run_extmem("probe --only=T3-memfd-cross-process,T3-memfd-sealed --peer=" + server.endpoint());
  killer.join();
  EXPECT_EQ(peer.code, 1) << peer.out;
  EXPECT_NE(result_line(peer.out, "T3-memfd-cross-process").find("closed the session"), std::string::npos) << peer.out;
  EXPECT_NE(result_line(peer.out, "T3-memfd-sealed").find("is over"), std::string::npos) << peer.out;
}

TEST(ServeRun, SigtermEndsTheSessionInProgressAndReleasesEverything) {
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=0", "-u XDG_RUNTIME_DIR")) << server.output();
  const std::string out = server.output();
  const std::size_t at = out.find("use a private ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string runtime_dir = out.substr(at + 14, out.find(' ', at + 14) - at - 14);
  // The driving side's half hangs, so the serving half is mid-route when the server is stopped.
  extmem::test::TempDir dir;
  const std::string cmd = "env EXTMEM_TEST_FAULT=T3-memfd-cross-process:client:mmap:hang " + std::string(EXTMEM_BINARY) +
                          " probe --only=T3-memfd-cross-process --timeout=120 --peer=" + server.endpoint() + " >" +
                          dir.file("peer.out") + " 2>&1; echo $? >" + dir.file("peer.code");
  // Its own process group (setsid execs in place: a spawned child leads no group), so it and its workers end together.
  auto peer = os::ChildProcess::spawn("/usr/bin/setsid", {"setsid", "sh", "-c", cmd}, {});
  ASSERT_TRUE(peer);
  for (int i = 0; i < 600 && extmem::test::slurp(dir.path / "peer.out").find("== routes") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(::kill(server.child.pid(), SIGTERM), 0);
  const os::ExitInfo how = server.finish(60);
  EXPECT_TRUE(how.exited && how.code == 0) << how.describe() << "\n" << server.output();
  EXPECT_NE(server.output().find("the server was stopped (SIGTERM)"), std::string::npos) << server.output();
  EXPECT_NE(::access(server.endpoint().c_str(), F_OK), 0) << "the socket file is removed";
  EXPECT_NE(::access(runtime_dir.c_str(), F_OK), 0) << runtime_dir << " is removed";
  // The driving side hears that its serving half was killed; its own half hangs on until its timeout, so end it.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(-peer->pid(), SIGKILL);
  (void)peer->kill_and_reap();
}

// --- nothing grows from session to session ---------------------------------------

TEST(ServeRun, TwentySessionsLeaveTheServersFdsAsTheFirstDid) {
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=21")) << server.output();
  // The serve process itself: the shell exec()ed it.
  std::size_t after_first = 0;
  for (int s = 1; s <= 20; ++s) {
    const ShellRun peer = run_extmem("probe --only=T3-memfd-cross-process --peer=" + server.endpoint());
    ASSERT_EQ(peer.code, 0) << "session " << s << "\n" << peer.out;
    ASSERT_TRUE(server.wait_for("session " + std::to_string(s) + ":", 30)) << server.output();
    if (s == 1) after_first = open_fds(server.child.pid());
  }
  EXPECT_EQ(open_fds(server.child.pid()), after_first) << server.output();
}

// --- the boundary matrix (docs/serve.md): the driving side in each cell ------------

namespace matrix {

struct Cell {
  const char* name;
  std::string wrapper;    // words before the extmem command; "@OUT" is the cell's output directory
  const char* fact;       // a boundary fact the handshake must find
  const char* pidfd_why;  // what T1-opaque-fd@pidfd's why must hold, or nullptr: it must be OK
};

std::string bwrap_words(const std::string& sock_dir) {
  const std::string bin_dir = std::filesystem::path(EXTMEM_BINARY).parent_path().string();
  return "bwrap --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin "
         "--symlink usr/sbin /sbin --ro-bind /etc /etc --tmpfs /tmp --ro-bind " + bin_dir + " " + bin_dir +
         " --bind " + sock_dir + " " + sock_dir + " --bind @OUT @OUT --dev /dev --proc /proc --unshare-all --die-with-parent";
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
  return s;
}

class ServeMatrix : public ::testing::TestWithParam<Cell> {};

TEST_P(ServeMatrix, TheDrivingSideInTheCellNamesItsBoundary) {
  const Cell& cell = GetParam();
  if (::geteuid() != 0) GTEST_SKIP() << "the cells change uid and namespaces: run as root";
  ServeProcess server;
  ASSERT_TRUE(server.start("--sessions=1 --allow-uid=0,65534 --allow-group=65534")) << server.output();
  extmem::test::TempDir out;
  ::chmod(out.path.c_str(), 0777);  // uid 65534 writes its document there
  const std::string wrapper = replace_all(std::string(cell.wrapper) == "bwrap" ? bwrap_words(server.dir.path.string())
                                                                                : cell.wrapper,
                                          "@OUT", out.path.string());
  // A cell the kernel or the machine refuses (no unprivileged namespaces in a container, no
  // bubblewrap) is skipped on its own, saying why.
  const ShellRun can = extmem::test::run_shell(wrapper + " " + EXTMEM_BINARY + " --version");
  if (can.code != 0) GTEST_SKIP() << "cell " << cell.name << " cannot start here: " << wrapper << ": " << can.out;
  const std::string doc_path = out.file("cell.json");
  const ShellRun peer = extmem::test::run_shell(wrapper + " " + EXTMEM_BINARY +
                                                " probe --only=T1-opaque-fd,T3-memfd-cross-process,T5-ucx-rma "
                                                "--fd-transport=both --json=" + doc_path + " --peer=" + server.endpoint());
  const json doc = json::parse(extmem::test::slurp(doc_path), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << peer.out;
  bool found = false;
  for (const json& f : doc["peer"]["boundary"]) found = found || f["fact"] == cell.fact;
  EXPECT_TRUE(found) << cell.fact << " not in " << doc["peer"]["boundary"].dump();
  const auto rows = statuses(doc_path);
  EXPECT_EQ(rows.at("T1-opaque-fd"), "OK") << peer.out;
  EXPECT_EQ(rows.at("T3-memfd-cross-process"), "OK") << peer.out;
  const std::string twin = result_line(peer.out, "T1-opaque-fd@pidfd");
  if (cell.pidfd_why == nullptr) {
    EXPECT_EQ(rows.at("T1-opaque-fd@pidfd"), "OK") << twin;
  } else {
    EXPECT_EQ(rows.at("T1-opaque-fd@pidfd"), "UNSUPPORTED") << twin;
    EXPECT_NE(twin.find(cell.pidfd_why), std::string::npos) << twin;
  }
  // UCX loses its shared-memory path without a shared IPC namespace and does not say so: the row does.
  if (std::string(cell.name) == "e_ipc" && rows.at("T5-ucx-rma") != "SKIP")
    EXPECT_NE(result_line(peer.out, "T5-ucx-rma").find("FAIL"), std::string::npos) << result_line(peer.out, "T5-ucx-rma");
  EXPECT_EQ(server.finish(60).code, 0) << server.output();
}

INSTANTIATE_TEST_SUITE_P(
    Cells, ServeMatrix,
    ::testing::Values(Cell{"c_uid", "setpriv --reuid=65534 --regid=65534 --clear-groups", "uid", "EPERM"},
                      Cell{"d_pid", "unshare --pid --fork --mount-proc", "ns:pid", "another PID namespace"},
                      Cell{"e_ipc", "unshare --ipc", "ns:ipc", nullptr},
                      Cell{"f_dev_shm", "unshare --mount sh -c 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec \"$@\"' cell",
                           "dev_shm", nullptr},
                      Cell{"g_net", "unshare --net", "ns:net", nullptr},
                      Cell{"h_user", "unshare --user --map-root-user", "ns:user", "EPERM"},
                      Cell{"i_bwrap", "bwrap", "ns:pid", "another PID namespace"}),
    [](const ::testing::TestParamInfo<Cell>& info) { return std::string(info.param.name); });

TEST(ServeMatrix, AnAbstractEndpointIsNotReachableFromAnotherNetworkNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a network namespace";
  if (extmem::test::run_shell("unshare --net true").code != 0) GTEST_SKIP() << "unshare --net is refused here";
  const std::string name = "@extmem-test-" + std::to_string(::getpid());
  ServeProcess server;
  server.dir.path.clear();  // no socket file: the endpoint is abstract
  const std::string cmd = "exec " + std::string(EXTMEM_BINARY) + " probe serve --endpoint=" + name + " --sessions=1";
  extmem::test::TempDir logs;
  auto c = os::ChildProcess::spawn("/bin/sh", {"sh", "-c", cmd + " >" + logs.file("out") + " 2>&1"}, {});
  ASSERT_TRUE(c);
  server.child = std::move(*c);
  for (int i = 0; i < 1800 && extmem::test::slurp(logs.path / "out").find("== serving on") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const ShellRun away = extmem::test::run_shell("unshare --net " + std::string(EXTMEM_BINARY) +
                                                " probe --only=T3-memfd-cross-process --peer=" + name);
  EXPECT_EQ(away.code, 3) << away.out;
  EXPECT_NE(away.out.find("ECONNREFUSED"), std::string::npos) << away.out;
  const ShellRun same = run_extmem("probe --only=T3-memfd-cross-process --peer=" + name);
  EXPECT_EQ(same.code, 0) << same.out;
}

}  // namespace matrix

}  // namespace
