// extmem probe serve: the serving side of a probe run across a boundary
// (docs/serve.md). One lane's slot A worker runs every half a session sends.
#include "extmem/probe/serve.h"

#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <iterator>
#include <future>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "extmem/os/child.h"
#include "extmem/os/clock.h"
#include "extmem/os/endpoint.h"
#include "extmem/os/file.h"
#include "extmem/os/meminfo.h"
#include "extmem/probe/write.h"
#include "extmem/version.h"
#include "probe/job_codec.h"
#include "probe/layout.h"
#include "probe/parent/fd_check.h"
#include "probe/parent/phase_a.h"
#include "probe/parent/route_deadline.h"
#include "probe/parent/runtime_dir.h"
#include "probe/parent/worker_pool.h"
#include "probe/phase_a_codec.h"
#include "probe/phase_a_wire.h"
#include "probe/routes.h"
#include "probe/serve/serve_read.h"
#include "probe/serve/session_codec.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

constexpr double kPhaseATimeoutS = 120;
constexpr std::size_t kKeptLogs = 100;  // sessions and refusals the document lists

Error serve_usage(std::string option, std::string detail) {
  return Error{std::move(option), ErrorKind::invalid_argument, {}, std::move(detail)};
}

// The group --allow-group names: a group name, or a gid in decimal.
Result<gid_t> group_of(const std::string& text) {
  gid_t gid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), gid);
  if (ec == std::errc() && end == text.data() + text.size()) return gid;
  if (const group* g = ::getgrnam(text.c_str())) return g->gr_gid;
  return serve_usage("--allow-group", fmt::format("\"{}\" names no group; accepted: a group name or a gid", text));
}

// kDefaultMaxSizeFraction of MemAvailable, rounded down to a page; 0 when /proc/meminfo says nothing.
std::uint64_t default_max_size() {
  const auto available = os::mem_available_bytes();
  return available ? static_cast<std::uint64_t>(*available * kDefaultMaxSizeFraction) / 4096 * 4096 : 0;
}

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// SIGINT, SIGTERM or SIGHUP: the server stops at its next wait, ends the session in
// progress (killing a half it runs) and returns, so the socket file, the workers and
// the private runtime directory are released as on a normal end.
volatile std::sig_atomic_t g_stop_signal = 0;
void note_stop(int sig) { g_stop_signal = sig; }

class StopOnSignals {
 public:
  StopOnSignals() {
    struct sigaction sa {};
    sa.sa_handler = note_stop;  // no SA_RESTART: a poll in progress returns EINTR
    ::sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &sa, &before_[i]);
  }
  ~StopOnSignals() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &before_[i], nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction before_[std::size(kSignals)] {};
};

std::string stop_text() { return fmt::format("the server was stopped ({})", os::signal_name(g_stop_signal)); }

// The peer as a line names it: its uid and pid, or its address where nothing names its user.
std::string who(const os::PeerCredentials& c) {
  if (!c.identified) return fmt::format("peer {} (uid unknown: another host or network namespace)", c.address);
  if (!c.address.empty()) return fmt::format("uid {} at {}", c.uid, c.address);  // TCP names no pid
  return fmt::format("uid {} pid {}", c.uid, c.pid);
}

// How long a route connection may take to come after its job (tcp: endpoints).
constexpr int kRouteConnectionMs = 10'000;

// One half this server ran, for its line and its document.
struct ServedHalf {
  std::string row, role, ended;
  double seconds = 0;
};

// One session, or one refused connection (then `refused` is set and nothing ran).
struct SessionLog {
  unsigned number = 0;
  os::PeerCredentials credentials;
  std::string run_id;
  std::optional<SideContext> peer;
  std::vector<BoundaryFact> boundary;
  std::vector<ServedHalf> halves;
  std::optional<SessionRefusal> refused;
  std::string ended;
};

class Server {
 public:
  Server(const ServeOptions& o, os::Listener listener, Lane& lane, PhaseA phase_a, std::ostream& out)
      : o_(o), listener_(std::move(listener)), lane_(lane), phase_a_(std::move(phase_a)), out_(out) {
    role_ = o.role == ServeRole::server ? Role::server : Role::client;
    max_size_ = o.max_size != 0 ? o.max_size : default_max_size();
    allowed_ = o.allow_uids.empty() ? std::vector<std::uint32_t>{static_cast<std::uint32_t>(::getuid())} : o.allow_uids;
    here_ = read_side_context();
  }

  std::uint64_t max_size() const { return max_size_; }
  const std::vector<std::uint32_t>& allowed() const { return allowed_; }

  // Serves until o_.sessions sessions ran (0: forever). Returns the exit code.
  int run() {
    for (unsigned served = 0; o_.sessions == 0 || served < o_.sessions;) {
      if (g_stop_signal != 0) {
        out_ << fmt::format("serve: {}\n", stop_text());
        return kExitOk;
      }
      auto conn = listener_.accept(-1);
      if (!conn) {
        // A peer that went away before its accept (ECONNABORTED), or no fd left for it (EMFILE):
        // that connection is lost, the server is not; a pause keeps a lasting cause from spinning.
        if (conn.error().is_errno(EBADF) || conn.error().is_errno(EINVAL)) {
          out_ << fmt::format("serve: {}\n", conn.error().message());
          return kExitCannotRun;
        }
        if (!conn.error().is_errno(EINTR)) {
          out_ << fmt::format("serve: {}; serving on\n", conn.error().message());
          ::usleep(100 * 1000);
        }
        continue;
      }
      SessionLog log;
      log.credentials = conn->second;
      if (auto no = not_allowed(conn->second)) {
        refuse(conn->first, log, Refusal::not_allowed, *no);
      } else {
        log.number = served + 1;
        if (session(conn->first, log)) ++served;
        else log.number = 0;  // refused at its hello: not a session
      }
      print(log);
      keep(std::move(log));
      if (!o_.json_path.empty()) (void)os::write_file_atomically(o_.json_path, document());
    }
    return kExitOk;
  }

 private:
  // Why a peer may not use this server, or nothing: its uid is allowed, or nothing
  // names its user and --listen-any lets such peers in.
  std::optional<std::string> not_allowed(const os::PeerCredentials& c) const {
    if (!c.identified) {
      if (o_.listen_any) return std::nullopt;
      return fmt::format("peer {} is not identified (no uid: another host or network namespace); --listen-any serves "
                         "such peers", c.address);
    }
    if (std::find(allowed_.begin(), allowed_.end(), c.uid) != allowed_.end()) return std::nullopt;
    return fmt::format("uid {} may not use this server; it serves uid {} (--allow-uid)", c.uid, fmt::join(allowed_, ","));
  }

  // Tells the peer why and ends its session; the server goes on.
  void refuse(const os::Channel& c, SessionLog& log, Refusal reason, std::string detail) {
    log.refused = SessionRefusal{reason, std::move(detail)};
    (void)c.send(os::MsgType::reply, encode_event(SessionEvent{.refused = log.refused}));
  }

  // The document lists the last kKeptLogs sessions and refusals: a server left running
  // for months must not grow with every peer it met.
  void keep(SessionLog log) {
    ++logged_;
    logs_.push_back(std::move(log));
    if (logs_.size() > kKeptLogs) logs_.erase(logs_.begin());
  }

  // A peer that connects while a session runs is told the server is busy.
  void refuse_waiting_peer() {
    auto conn = listener_.accept(0);
    if (!conn) return;
    SessionLog log;
    log.credentials = conn->second;
    refuse(conn->first, log, Refusal::busy, "another driving peer's session is running; one is served at a time");
    print(log);
    keep(std::move(log));
  }

  // Waits at most `timeout_ms` for a frame on `c`, refusing peers that connect meanwhile.
  Result<os::Frame> next_frame(const os::Channel& c, int timeout_ms) {
    const double until = os::monotonic_seconds() + timeout_ms / 1000.0;
    for (;;) {
      if (g_stop_signal != 0) return Error{"session", ErrorKind::timeout, {}, stop_text()};
      const double left = until - os::monotonic_seconds();
      if (left <= 0) return Error{"session", ErrorKind::timeout, {}, "nothing came"};
      pollfd p[2] = {{c.fd(), POLLIN, 0}, {listener_.fd(), POLLIN, 0}};
      const int r = ::poll(p, 2, static_cast<int>(left * 1000) + 1);
      if (r < 0 && errno != EINTR) return os_error("poll", errno);
      // The session's frame first: a tcp: job's route connection may be waiting beside it.
      if (r > 0 && p[0].revents != 0) return c.recv(0);
      if (r > 0 && (p[1].revents & POLLIN)) refuse_waiting_peer();
    }
  }

  // The handshake, then one job after another until the peer closes. Returns whether
  // the session counts (its hello was accepted).
  bool session(const os::Channel& c, SessionLog& log) {
    const int idle_ms = static_cast<int>(seconds(o_.idle_timeout) * 1000);
    auto first = next_frame(c, idle_ms);
    if (!first) {
      if (g_stop_signal != 0)
        refuse(c, log, Refusal::server_error, stop_text());
      else if (first.error().kind == ErrorKind::timeout)
        refuse(c, log, Refusal::idle, fmt::format("no hello within --idle-timeout={:g} s", seconds(o_.idle_timeout)));
      else if (first.error().kind == ErrorKind::peer_closed)
        log.ended = "closed before its hello";
      else
        refuse(c, log, Refusal::malformed, first.error().message());
      return false;
    }
    auto read = read_hello(*first);
    if (auto* no = std::get_if<SessionRefusal>(&read)) {
      refuse(c, log, no->reason, no->detail);
      return false;
    }
    const Hello* hello = std::get_if<Hello>(&read);
    log.run_id = hello->run_id;
    log.peer = hello->context;
    log.boundary = compare_sides(here_, hello->context);
    const bool carries_fds = listener_.endpoint().carries_fds();
    const Welcome welcome{kServeProtocol, kVersion, role_, max_size_, here_, carries_fds ? "" : new_route_token()};
    route_token_ = welcome.route_token;
    if (!c.send(os::MsgType::reply, encode_welcome(welcome)) ||
        !c.send(os::MsgType::findings, encode_phase_a(phase_a_))) {
      log.ended = "the driving side went away during the handshake";
      return true;
    }
    for (;;) {
      auto frame = next_frame(c, idle_ms);
      if (!frame) {
        if (g_stop_signal != 0) {
          refuse(c, log, Refusal::server_error, stop_text());
          log.ended = stop_text();
        } else if (frame.error().kind == ErrorKind::timeout) {
          refuse(c, log, Refusal::idle, fmt::format("nothing came within --idle-timeout={:g} s", seconds(o_.idle_timeout)));
          log.ended = "idle";
        } else if (frame.error().kind == ErrorKind::peer_closed) {
          // A reset: it closed with frames it never read, such as its half's last ones.
          log.ended = frame.error().is_errno(ECONNRESET) ? "the driving side went away with frames unread"
                                                         : "the driving side closed the session";
        } else {
          refuse(c, log, Refusal::malformed, frame.error().message());
        }
        return true;
      }
      auto incoming = read_between_jobs(*frame, role_, max_size_, carries_fds);
      if (auto* no = std::get_if<SessionRefusal>(&incoming)) {
        refuse(c, log, no->reason, no->detail);
        return true;
      }
      auto& in = std::get<Incoming>(incoming);
      if (in.abandon) {
        // The half it abandons has ended already (its done crossed the abandon): say so.
        (void)c.send(os::MsgType::reply, encode_event(SessionEvent{.half_ended = os::ExitInfo{true, 0, false, 0}}));
        continue;
      }
      os::UniqueFd peer_end = std::move(frame->fd);
      if (!carries_fds && two_halves(*in.job)) {
        auto conn = route_connection(log);
        if (auto* no = std::get_if<SessionRefusal>(&conn)) {
          refuse(c, log, no->reason, no->detail);
          return true;
        }
        peer_end = std::move(std::get<os::UniqueFd>(conn));
      }
      if (!job(c, *in.job, std::move(peer_end), log)) {
        if (log.ended.empty() && !log.halves.empty()) log.ended = log.halves.back().ended;  // how its half ended it
        return true;
      }
    }
  }

  static bool two_halves(const HalfParams& job) { return find_route(job.row)->client.main != nullptr; }

  // tcp: the route's peer socket: the next connection whose route hello names this
  // session, within kRouteConnectionMs. Other peers meanwhile are refused (busy), and
  // so is a connection whose first frame is not this session's route hello.
  std::variant<os::UniqueFd, SessionRefusal> route_connection(const SessionLog& log) {
    const double until = os::monotonic_seconds() + kRouteConnectionMs / 1000.0;
    for (;;) {
      const double left = until - os::monotonic_seconds();
      if (g_stop_signal != 0) return SessionRefusal{Refusal::server_error, stop_text()};
      if (left <= 0)
        return SessionRefusal{Refusal::malformed, fmt::format("no route connection came within {} ms of its job",
                                                              kRouteConnectionMs)};
      auto conn = listener_.accept(static_cast<int>(left * 1000) + 1);
      if (!conn) continue;  // a timeout, or a peer gone before its accept: the loop's clock decides
      const os::PeerCredentials& c = conn->second;
      SessionRefusal no{Refusal::busy, "another driving peer's session is running; one is served at a time"};
      if (c.identified == log.credentials.identified && c.uid == log.credentials.uid) {
        // This session's peer: its first frame must be the route hello.
        if (auto first = conn->first.recv(static_cast<int>(left * 1000) + 1)) {
          auto refused = read_route_hello(*first, log.run_id, route_token_);
          if (!refused) return std::move(conn->first.owned_fd());
          no = std::move(*refused);
        }
      }
      SessionLog other;
      other.credentials = c;
      refuse(conn->first, other, no.reason, no.detail);
      print(other);
      keep(std::move(other));
    }
  }

  // Runs one job read_between_jobs() accepted, relaying its half's frames;
  // `peer_end` is the half's end of the route's peer socket. Returns false when the session is over.
  bool job(const os::Channel& c, const HalfParams& params, os::UniqueFd peer_end, SessionLog& log) {
    const RouteDef* route = find_route(params.row);
    const double start = os::monotonic_seconds();
    WorkerProcess* w = nullptr;
    const std::string payload = encode_job(params);
    if (!peer_end.valid()) {
      // tcp: a single-process row's half has no peer, but a worker's job carries a socket.
      auto unused = os::Channel::pair();
      if (!unused) {
        refuse(c, log, Refusal::server_error, "socketpair for a single-process row: " + unused.error().message());
        return false;
      }
      peer_end = std::move(unused->first.owned_fd());
    }
    for (int attempt = 0; attempt < 2 && w == nullptr; ++attempt) {
      auto got = lane_.worker(Slot::a);
      if (!got) break;
      if ((*got)->control.send(os::MsgType::job, payload, peer_end.get()).ok()) w = *got;
      else lane_.drop(Slot::a);
    }
    peer_end.reset();  // the worker has its own copy now
    if (w == nullptr) {
      refuse(c, log, Refusal::server_error, "the serving side could not start a worker for the half");
      return false;
    }
    ServedHalf half{params.row, to_string(role_), {}, 0};
    const bool session_on = relay(c, *w, RouteDeadline{start, seconds(o_.timeout) + params.soak_s}, half);
    if (session_on && route->retires_worker) {
      lane_.retire(Slot::a);
      // Its successor starts its drivers now, not when the next job waits on it; not in the
      // last session, where it would only hold up the server's exit.
      if (o_.sessions == 0 || log.number < o_.sessions) (void)lane_.worker(Slot::a);
    }
    half.seconds = os::monotonic_seconds() - start;
    log.halves.push_back(std::move(half));
    return session_on;
  }

  // Passes the worker's step, report and done frames on until its half ends. A
  // worker that dies, hangs past the deadline or breaks the protocol, and a half
  // the peer abandons, are killed, and the peer is told how the half ended.
  bool relay(const os::Channel& c, WorkerProcess& w, RouteDeadline limit, ServedHalf& half) {
    auto ended = [&](const os::ExitInfo& info, std::string why) {
      half.ended = std::move(why);
      return c.send(os::MsgType::reply, encode_event(SessionEvent{.half_ended = info})).ok();
    };
    auto kill = [&] {
      const os::ExitInfo info = w.child.kill_and_reap();
      lane_.drop(Slot::a);
      return info;
    };
    for (;;) {
      if (g_stop_signal != 0) return ended(kill(), "killed: " + stop_text());
      const double left = limit.at(!w.answered) - os::monotonic_seconds();
      if (left <= 0) return ended(kill(), "killed: past its deadline");
      pollfd p[3] = {{w.control.fd(), POLLIN, 0}, {c.fd(), POLLIN, 0}, {listener_.fd(), POLLIN, 0}};
      const int r = ::poll(p, 3, static_cast<int>(left * 1000) + 1);
      if (r < 0 && errno != EINTR) return ended(kill(), "killed: poll failed");
      if (r <= 0) continue;
      if (p[2].revents & POLLIN) refuse_waiting_peer();
      if (p[1].revents != 0) {
        auto frame = c.recv(0);
        if (!frame) {
          if (frame.error().kind == ErrorKind::timeout) continue;
          kill();
          half.ended = frame.error().kind == ErrorKind::peer_closed
                           ? "killed: the driving side went away mid-route"
                           : "killed: the driving side's frame could not be read mid-route: " + frame.error().message();
          return false;
        }
        if (auto no = read_mid_route(*frame)) {
          kill();
          half.ended = "killed: the driving side broke the protocol mid-route";
          (void)c.send(os::MsgType::reply, encode_event(SessionEvent{.refused = no}));
          return false;
        }
        return ended(kill(), "killed: abandoned by the driving side");
      }
      if (p[0].revents == 0) continue;
      auto frame = w.control.recv(0);
      if (frame && !w.answered) {
        w.answered = true;
        limit.first_frame(os::monotonic_seconds());
      }
      if (!frame) {
        if (frame.error().kind == ErrorKind::timeout) continue;
        if (frame.error().kind != ErrorKind::peer_closed)
          return ended(kill(), "killed: its worker sent a malformed frame: " + frame.error().message());
        auto info = w.child.wait(2000);
        const os::ExitInfo how = info ? *info : w.child.kill_and_reap();
        lane_.drop(Slot::a);
        return ended(how, "its worker ended: " + how.describe());
      }
      if (frame->type != os::MsgType::step && frame->type != os::MsgType::report && frame->type != os::MsgType::done)
        return ended(kill(), fmt::format("killed: its worker sent message type {}", static_cast<int>(frame->type)));
      if (!c.send(frame->type, frame->payload)) {
        kill();
        half.ended = "killed: the driving side went away mid-route";
        return false;
      }
      if (frame->type == os::MsgType::done) {
        half.ended = "done";
        return true;
      }
    }
  }

  void print(const SessionLog& l) {
    if (l.refused && l.number == 0) {
      out_ << fmt::format("refused: {}: {}: {}\n", who(l.credentials), to_string(l.refused->reason), l.refused->detail);
      out_.flush();  // a journal or a file shows it now, not at the next session
      return;
    }
    out_ << fmt::format("session {}: {} run {}: {} halves{}{}\n", l.number, who(l.credentials), l.run_id.empty() ? "-" : l.run_id, l.halves.size(),
                        l.refused ? fmt::format(", refused: {}: {}", to_string(l.refused->reason), l.refused->detail) : "",
                        l.ended.empty() ? "" : ", ended: " + l.ended);
    for (const BoundaryFact& f : l.boundary) out_ << fmt::format("  boundary: {} [{}]\n", f.text, f.fact);
    out_.flush();
  }

  std::string document() const {
    json sessions = json::array(), refused = json::array();
    for (const SessionLog& l : logs_) {
      json who = {{"uid", l.credentials.uid}, {"pid", l.credentials.pid}};
      if (!l.credentials.address.empty()) who["address"] = l.credentials.address;
      if (!l.credentials.identified) who["uid"] = nullptr;
      json why = l.refused ? json{{"reason", to_string(l.refused->reason)}, {"detail", l.refused->detail}} : json(nullptr);
      if (l.number == 0) {
        refused.push_back({{"peer", who}, {"refused", why}});
        continue;
      }
      json halves = json::array();
      for (const ServedHalf& h : l.halves)
        halves.push_back({{"row", h.row}, {"role", h.role}, {"ended", h.ended}, {"seconds", h.seconds}});
      sessions.push_back({{"session", l.number}, {"run_id", l.run_id}, {"peer", who},
                          {"peer_context", l.peer ? side_context_json(*l.peer) : json(nullptr)},
                          {"boundary", boundary_json(l.boundary)}, {"halves", halves}, {"refused", why}, {"ended", l.ended}});
    }
    json doc = {{"schema", "extmem-serve-result"}, {"tool_version", kVersion}, {"endpoint", listener_.endpoint().text()},
                {"serve_role", to_string(role_)}, {"max_size", max_size_}, {"allow_uids", allowed_},
                {"side_context", side_context_json(here_)}, {"connections", logged_},
                {"sessions", sessions}, {"refused", refused}};
    doc.update(phase_a_json(phase_a_));
    return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }

  const ServeOptions& o_;
  os::Listener listener_;
  Lane& lane_;
  PhaseA phase_a_;
  std::ostream& out_;
  Role role_ = Role::server;
  std::uint64_t max_size_ = 0;
  std::vector<std::uint32_t> allowed_;
  SideContext here_;
  std::string route_token_;       // tcp: the session's, which its route connections present
  std::vector<SessionLog> logs_;  // the last kKeptLogs
  std::uint64_t logged_ = 0;      // sessions and refusals since the start
};

}  // namespace

const char* to_string(ServeRole role) noexcept { return role == ServeRole::server ? "server" : "client"; }

Status validate(const ServeOptions& o) {
  if (o.endpoint.empty())
    return serve_usage("--endpoint", "is required; accepted: a socket path, @NAME (an abstract socket) or tcp:HOST:PORT");
  auto endpoint = os::parse_endpoint(o.endpoint);
  if (!endpoint) return serve_usage("--endpoint", fmt::format("\"{}\": {}", o.endpoint, endpoint.error().detail));
  if (o.listen_any && endpoint->kind != os::Endpoint::Kind::tcp)
    return serve_usage("--listen-any", "applies to a tcp: endpoint only; a socket path or @NAME has no address to widen");
  if (!o.allow_group.empty() && endpoint->kind != os::Endpoint::Kind::path)
    return serve_usage("--allow-group", fmt::format("sets a socket file's group; {} has no file (--allow-uid applies)",
                                                    endpoint->kind == os::Endpoint::Kind::tcp ? "a tcp: endpoint"
                                                                                              : "an abstract @NAME socket"));
  if (o.idle_timeout < kIdleTimeoutRange.min || o.idle_timeout > kIdleTimeoutRange.max)
    return serve_usage("--idle-timeout", fmt::format("{:g} s is not accepted: {}", seconds(o.idle_timeout),
                                                     describe_duration(kIdleTimeoutRange)));
  if (o.timeout < kTimeoutRange.min || o.timeout > kTimeoutRange.max)
    return serve_usage("--timeout", fmt::format("{:g} s is not accepted: {}", seconds(o.timeout), describe_duration(kTimeoutRange)));
  if (o.max_size != 0 && (o.max_size % 4096 != 0 || o.max_size < kMinSize || o.max_size > static_cast<std::uint64_t>(kMaxJobSize)))
    return serve_usage("--max-size", fmt::format("{} bytes is not accepted: a multiple of 4096 from {} to {}", o.max_size,
                                                 kMinSize, kMaxJobSize));
  if (!o.allow_group.empty())
    if (auto g = group_of(o.allow_group); !g) return std::move(g).error();
  if (!o.json_path.empty())
    if (std::string problem = os::creatable_problem(o.json_path); !problem.empty()) return serve_usage("--json", problem);
  return {};
}

int serve(const ServeOptions& o, std::ostream& out, std::ostream& err) {
  auto say = [&](const Error& e) {
    err << "extmem probe serve: " << (e.step.empty() ? "" : e.step + ": ") << e.detail
        << (e.code.empty() ? "" : " (" + e.code + ")") << "\n";
  };
  if (auto v = validate(o); !v) {
    say(v.error());
    return kExitUsage;
  }
  ProbeOptions po;
  po.worker = o.worker;
  auto exe = find_worker(po);
  if (!exe) {
    say(exe.error());
    return kExitCannotRun;
  }
  std::optional<gid_t> group;
  if (!o.allow_group.empty()) group = *group_of(o.allow_group);
  // First, so a second server on the same endpoint ends at once, before any driver starts.
  auto listener = os::Listener::listen(*os::parse_endpoint(o.endpoint), group, o.listen_any);
  if (!listener) {
    say(listener.error());
    // A host that does not resolve or is not loopback is the option's fault, not the machine's.
    return listener.error().kind == ErrorKind::invalid_argument ? kExitUsage : kExitCannotRun;
  }
  // A peer that vanishes mid-send must not end the server.
  ::signal(SIGPIPE, SIG_IGN);
  g_stop_signal = 0;
  const StopOnSignals stop;  // before the runtime directory, which then leaves the signals to it
  const PrivateRuntimeDir runtime_dir;
  std::future<FdTransportFinding> fd_check = std::async(std::launch::async, [w = *exe] { return check_fd_transport(w); });
  // The server does not know which rows a peer will ask for: every driver starts.
  std::vector<std::string> device_args = {"--worker-select", "--phase-a=vulkan,gl,cuda"};
  if (!o.device.empty()) device_args.push_back("--worker-device=" + o.device);
  Lane lane(*exe, device_args, WorkerWarmth{true, true, to_string(o.gl_driver)});
  if (auto started = lane.start(false); !started) {
    say(started.error());
    return kExitCannotRun;
  }
  auto found = receive_phase_a(lane, kPhaseATimeoutS);
  if (!found || !*found) {
    const Error& e = !found ? found.error() : found->error();
    say(e);
    return e.kind == ErrorKind::invalid_argument ? kExitUsage : kExitCannotRun;
  }
  PhaseA a = std::move(**found);
  lane.set_device_index(a.selected);
  a.context = read_run_context();
  runtime_dir.describe(a.context);
  a.fd_transport = fd_check.get();
  write_found(out, a);
  const os::Endpoint bound = listener->endpoint();  // tcp: the port the kernel chose for port 0
  Server server(o, std::move(*listener), lane, std::move(a), out);
  out << fmt::format("== serving on {}: the {} halves, {} session(s), --max-size={} bytes, uids {}{}\n", bound.text(),
                     to_string(o.role), o.sessions == 0 ? std::string("unlimited") : std::to_string(o.sessions),
                     server.max_size(), fmt::join(server.allowed(), ","),
                     bound.carries_fds() ? "" : o.listen_any ? " (bytes only: rows that hand fds are refused; unidentified peers served)"
                                                             : " (bytes only: rows that hand fds are refused)");
  out.flush();
  return server.run();
}

}  // namespace extmem::probe
