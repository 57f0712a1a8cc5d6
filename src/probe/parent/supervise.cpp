#include "probe/parent/supervise.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <optional>

#include <fmt/format.h>

#include "extmem/os/child.h"
#include "extmem/os/clock.h"
#include "extmem/os/ipc.h"
#include "probe/done_codec.h"
#include "probe/job_codec.h"
#include "probe/parent/route_deadline.h"
#include "probe/parent/worker_pool.h"
#include "probe/route_report.h"
#include "probe/parent/remote.h"
#include "probe/serve/session_codec.h"

namespace extmem::probe {
namespace {

// One half as the event loop sees it, whichever process runs it.
struct Half {
  Role role;
  const os::Channel* channel = nullptr;  // steps, the report, and (warm) the done frame
  bool open = true;     // still running the route
  bool spawned = false;
  bool warm = false;    // a worker: `done` ends the half, EOF means the worker died
  bool remote = false;  // on the serving side of --peer: its `reply` frames say how the half ended
  bool died = false;    // warm: the control socket closed mid-route
  bool* answered = nullptr;  // warm: its worker's WorkerProcess::answered
  std::string last_step = "start";
  std::optional<os::ExitInfo> exit;
  std::optional<Hygiene> hygiene;  // from its done frame
};

struct Collected {
  std::optional<RouteReport> report;
  std::optional<std::string> fatal;
  std::optional<ErrorKind> stop_kind;  // the fatal's kind where it is known (the serving side's words)
  bool timed_out = false;
  bool starting = false;  // timed out while a new worker was still starting its drivers
};

// Whether an open half still waits on a worker that has not answered since it started.
bool starting(const std::array<Half, 2>& halves) {
  for (const Half& h : halves)
    if (h.open && h.answered != nullptr && !*h.answered) return true;
  return false;
}

// A serving side's word on its half: it ended without a done frame, or the job was refused.
void remote_event(Half& h, Collected& c, const std::string& payload) {
  auto event = decode_event(payload);
  if (!event) {
    c.fatal = fmt::format("malformed message from the serving side after step \"{}\": {}", h.last_step,
                          event.error().message());
    c.stop_kind = ErrorKind::protocol;
  } else if (event->refused) {
    c.fatal = fmt::format("the serving side refused the {} half: {}: {}", to_string(h.role),
                          to_string(event->refused->reason), event->refused->detail);
    c.stop_kind = ErrorKind::invalid_argument;  // the job was not one it accepts
  } else if (event->half_ended) {
    h.open = false;
    h.exit = *event->half_ended;
  } else {
    c.fatal = "the serving side sent an abandon, which only the driving side sends";
    c.stop_kind = ErrorKind::protocol;
  }
}

// Reads frames from the open halves until both have ended, the deadline passes or a
// frame is malformed. Shared by both modes: the same input gives the same facts.
Collected collect(std::array<Half, 2>& halves, RouteDeadline limit) {
  Collected c;
  while ((halves[0].open || halves[1].open) && !c.fatal) {
    const double deadline = limit.at(starting(halves));
    std::array<pollfd, 2> fds{};
    std::array<Half*, 2> which{};
    nfds_t n = 0;
    for (Half& h : halves) {
      if (!h.open) continue;
      fds[n] = {h.channel->fd(), POLLIN, 0};
      which[n++] = &h;
    }
    const double left = deadline - os::monotonic_seconds();
    if (left <= 0) {
      c.timed_out = true;
      c.starting = starting(halves);
      break;
    }
    int r = ::poll(fds.data(), n, static_cast<int>(left * 1000) + 1);
    if (r < 0 && errno != EINTR) {
      c.fatal = fmt::format("parent: poll failed: {}", errno_code(errno));
      break;
    }
    for (nfds_t i = 0; i < n && r > 0; ++i) {
      if (fds[i].revents == 0) continue;
      Half& h = *which[i];
      auto frame = h.channel->recv(0);
      if (frame && h.answered != nullptr && !*h.answered) {
        *h.answered = true;
        limit.first_frame(os::monotonic_seconds());
      }
      if (!frame) {
        const Error& e = frame.error();
        if (e.kind == ErrorKind::timeout) continue;
        if (e.kind == ErrorKind::peer_closed) {
          h.open = false;
          h.died = h.warm;
        } else {
          c.fatal = fmt::format("malformed message from {} after step \"{}\": {}", to_string(h.role), h.last_step,
                                e.message());
        }
        continue;
      }
      if (frame->type == os::MsgType::step) {
        h.last_step = frame->payload.substr(0, 200);
      } else if (frame->type == os::MsgType::report) {
        auto decoded = decode_report(frame->payload);
        if (!decoded) {
          c.fatal = fmt::format("malformed report from {}: {}", to_string(h.role), decoded.error().message());
        } else if (!c.report) {
          c.report = std::move(*decoded);
        }
      } else if (frame->type == os::MsgType::done && h.warm) {
        auto done = decode_done(frame->payload);
        if (!done) {
          c.fatal = fmt::format("malformed done message from {} after step \"{}\": {}", to_string(h.role), h.last_step,
                                done.error().message());
        } else {
          h.open = false;
          h.exit = os::ExitInfo{true, done->exit_code, false, 0};
          h.hygiene = done->hygiene;
        }
      } else if (frame->type == os::MsgType::reply && h.remote) {
        remote_event(h, c, frame->payload);
      } else {
        c.fatal = fmt::format("unexpected message type {} from {}", static_cast<int>(frame->type), to_string(h.role));
      }
    }
  }
  return c;
}

// The row from what was collected; `still_running` names the halves the timeout cut off.
RowResult conclude(const RouteDef& route, const std::array<Half, 2>& halves, Collected& c,
                   const SuperviseParams& params, const std::string& still_running, double start) {
  RowResult result;
  result.row = std::string(route.row);
  result.server_step = halves[0].last_step;
  result.client_step = halves[1].last_step;
  result.seconds = os::monotonic_seconds() - start;

  RouteFacts facts;
  if (c.timed_out) {
    const std::string where = still_running.empty() ? "route" : still_running;
    stop_row(facts, ErrorKind::timeout,
             c.starting ? fmt::format("timeout after {:g} s starting a new worker's drivers in {}",
                                      RouteDeadline{0, params.timeout_s + params.half.soak_s}.start_up_s(), where)
                        : fmt::format("timeout after {:g} s in {}", params.timeout_s, where));
  } else if (c.fatal) {
    if (c.stop_kind) stop_row(facts, *c.stop_kind, *c.fatal);
    else facts.fatal = *c.fatal;
  } else {
    for (const Half& h : halves) {
      if (h.exit && h.exit->signaled) {
        facts.fatal = fmt::format("child died: {} in {}: {}", h.exit->describe(), to_string(h.role), h.last_step);
        break;
      }
    }
    if (!facts.fatal && !c.report) {
      std::string exits;
      for (const Half& h : halves)
        if (h.spawned)
          exits += fmt::format("{}{} {} after \"{}\"", exits.empty() ? "" : ", ", to_string(h.role),
                               h.exit ? h.exit->describe() : "killed", h.last_step);
      facts.fatal = "no report from the route (" + exits + ")";
    }
  }
  // A leg the route's table does not declare is the route's bug, not the driver's answer.
  if (!facts.fatal)
    if (std::string bad = undeclared_leg(route, c.report->legs); !bad.empty())
      stop_row(facts, ErrorKind::protocol, "the route reported what its entry does not declare: " + bad);
  if (facts.fatal) {
    result.verdict = decide(facts, {});
    if (c.report) result.legs = c.report->legs;
    return result;
  }
  result.legs = c.report->legs;
  result.detail = c.report->detail;
  result.soak = c.report->facts.soak;
  result.sync_holds = c.report->facts.sync_holds;
  // Every leg's figures as measured; row_measure() keeps the ones the row's verdict run round-tripped.
  if (c.report->measure) result.measure = RowMeasure{.figures = *c.report->measure};
  for (const Half& h : halves) {
    if (h.exit && h.exit->exited && h.exit->code != 0)
      result.detail.push_back(fmt::format("{} exited with code {}", to_string(h.role), h.exit->code));
  }
  result.verdict = decide(c.report->facts, c.report->legs);
  return result;
}

// "server: <step>; client: <step>" for the halves a timeout or a broken peer cut off.
void note_running(std::string& text, const Half& h) {
  text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", to_string(h.role), h.last_step);
}

std::array<Half, 2> two_halves(const RouteDef& route) {
  std::array<Half, 2> halves{Half{Role::server}, Half{Role::client}};
  if (route.client.main == nullptr) {
    halves[1].open = false;  // single-process route: no client half
    halves[1].last_step = "none (single-process route)";
  }
  return halves;
}

// Only labels: the row and role name the process in ps and extmem watch (and
// let a wrapper such as the tests' tell the halves apart); the child takes every
// parameter from its job.
std::vector<std::string> child_argv(const RouteDef& route, Role role, const SuperviseParams& p) {
  return {p.exe, "probe", fmt::format("--child={}", route.row), fmt::format("--role={}", to_string(role))};
}

// The job of one half: the run's record with that half's row and role.
std::string half_job(const RouteDef& route, Role role, const SuperviseParams& p) {
  HalfParams half = p.half;
  half.row = std::string(route.row);
  half.role = role;
  return encode_job(half);
}

}  // namespace

Result<RowResult> supervise(const RouteDef& route, const SuperviseParams& params) {
  const double start = os::monotonic_seconds();
  auto peer = os::Channel::pair();
  if (!peer) return std::move(peer).error();
  std::array<Half, 2> halves = two_halves(route);
  std::array<os::ChildProcess, 2> children;
  std::array<os::Channel, 2> reports;
  for (std::size_t i = 0; i < 2; ++i) {
    Half& h = halves[i];
    if (!h.open) continue;
    auto rep = os::Channel::pair();
    if (!rep) return std::move(rep).error();
    int peer_end = h.role == Role::server ? peer->first.fd() : peer->second.fd();
    auto child = os::ChildProcess::spawn(params.exe, child_argv(route, h.role, params), {peer_end, rep->second.fd()});
    if (!child) return std::move(child).error();
    children[i] = std::move(*child);
    h.spawned = true;
    reports[i] = std::move(rep->first);
    h.channel = &reports[i];
    // A child that is already gone fails this send; collect() then sees it exit without a report.
    (void)reports[i].send(os::MsgType::job, half_job(route, h.role, params));
    // rep->second (the child's end) closes here, so EOF on ours means the child is gone.
  }
  peer->first.owned_fd().reset();
  peer->second.owned_fd().reset();

  Collected c = collect(halves, RouteDeadline{start, params.timeout_s + params.half.soak_s});

  // Reap: give halves that closed their sockets a moment to exit, then kill whatever is left.
  std::string still_running;
  for (std::size_t i = 0; i < 2; ++i) {
    Half& h = halves[i];
    if (!c.timed_out && !c.fatal && !h.open) {
      auto info = children[i].wait(2000);
      if (info) {
        h.exit = *info;
        continue;
      }
    }
    if (children[i].pid() > 0) {
      if (h.open) note_running(still_running, h);
      children[i].kill_and_reap();
    }
  }
  return conclude(route, halves, c, params, still_running, start);
}

Result<RowResult> supervise_on_lane(const RouteDef& route, const SuperviseParams& params, Lane& lane) {
  const double start = os::monotonic_seconds();
  std::array<Half, 2> halves = two_halves(route);
  auto peer = os::Channel::pair();
  if (!peer) return std::move(peer).error();
  std::array<WorkerProcess*, 2> workers{};
  // The GL half runs on slot A, the worker that keeps EGL; otherwise the server half does.
  const bool client_on_a = route.client.main != nullptr && route.client.gl;
  const std::array<Slot, 2> slots{client_on_a ? Slot::b : Slot::a, client_on_a ? Slot::a : Slot::b};
  for (std::size_t i = 0; i < 2; ++i) {
    Half& h = halves[i];
    if (!h.open) continue;
    const int peer_end = h.role == Role::server ? peer->first.fd() : peer->second.fd();
    const std::string job = half_job(route, h.role, params);
    // A worker that died while idle (killed from outside) fails the send: start another once.
    for (int attempt = 0; attempt < 2 && workers[i] == nullptr; ++attempt) {
      auto w = lane.worker(slots[i]);
      if (!w) return std::move(w).error();
      if ((*w)->control.send(os::MsgType::job, job, peer_end).ok()) {
        workers[i] = *w;
      } else {
        lane.drop(slots[i]);
      }
    }
    if (workers[i] == nullptr) return os_error("send the job to a new worker", EPIPE);
    h.spawned = true;
    h.warm = true;
    h.channel = &workers[i]->control;
    h.answered = &workers[i]->answered;
  }
  peer->first.owned_fd().reset();
  peer->second.owned_fd().reset();

  Collected c = collect(halves, RouteDeadline{start, params.timeout_s + params.half.soak_s});

  std::string still_running;
  for (std::size_t i = 0; i < 2; ++i) {
    Half& h = halves[i];
    if (workers[i] == nullptr) continue;
    if (h.died) {
      // The worker is gone mid-route: how it ended is the half's exit (a signal, exit(), ...).
      auto info = workers[i]->child.wait(2000);
      h.exit = info ? *info : workers[i]->child.kill_and_reap();
      lane.drop(slots[i]);
    } else if (c.timed_out || c.fatal) {
      // Its route state is unknown (hung, or its peer broke the protocol): replace it.
      if (h.open) note_running(still_running, h);
      lane.drop(slots[i]);
    } else if (route.retires_worker) {
      lane.retire(slots[i]);
    }
  }
  RowResult r = conclude(route, halves, c, params, still_running, start);
  r.worker_hygiene.emplace();
  for (const Half& h : halves) (h.role == Role::server ? r.worker_hygiene->server : r.worker_hygiene->client) = h.hygiene;
  return r;
}

}  // namespace extmem::probe

namespace extmem::probe {
namespace {

// Asks the serving side to end its half and reads until it says the half ended,
// dropping the relayed frames of the route left behind. The session is unusable
// (broken) when no answer comes within 10 s.
void abandon_remote(RemoteSession& remote) {
  if (!remote.channel.send(os::MsgType::request, encode_event(SessionEvent{.abandon = true}))) {
    remote.broken = "the session closed while its half was abandoned";
    return;
  }
  const double until = os::monotonic_seconds() + 10;
  while (os::monotonic_seconds() < until) {
    auto frame = remote.channel.recv(static_cast<int>((until - os::monotonic_seconds()) * 1000) + 1);
    if (!frame) {
      if (frame.error().kind == ErrorKind::timeout) continue;
      remote.broken = "the session closed while its half was abandoned: " + frame.error().message();
      return;
    }
    if (frame->type != os::MsgType::reply) continue;  // the abandoned route's steps, report, done
    auto event = decode_event(frame->payload);
    if (event && event->half_ended) return;
  }
  remote.broken = "the serving side did not end its half within 10 s of being asked";
}

RowResult broken_session_row(const RouteDef& route, const RemoteSession& remote) {
  RowResult r;
  r.row = std::string(route.row);
  RouteFacts facts;
  stop_row(facts, ErrorKind::peer_closed, fmt::format("the session with the serving side ({}) is over: {}",
                                                      remote.finding.endpoint, remote.broken));
  r.verdict = decide(facts, {});
  return r;
}

// After collect(): each half's end as supervise_on_lane() settles it, and for the
// serving side's half the session's: broken when it closed, an abandon when the half
// still runs. Returns the halves a timeout or a failure cut off.
std::string settle_across(const RouteDef& route, std::array<Half, 2>& halves, Collected& c, Lane& lane,
                          WorkerProcess* local, RemoteSession& remote) {
  std::string still_running;
  for (Half& h : halves) {
    if (!h.spawned) continue;
    if (h.remote) {
      if (h.died) {
        remote.broken = fmt::format("the serving side closed the session during its {} half's step \"{}\"",
                                    to_string(h.role), h.last_step);
        if (!c.fatal && !c.timed_out) {
          c.fatal = remote.broken;
          c.stop_kind = ErrorKind::peer_closed;
        }
      } else if (h.open) {
        note_running(still_running, h);
        abandon_remote(remote);
      }
    } else if (h.died) {
      auto info = local->child.wait(2000);
      h.exit = info ? *info : local->child.kill_and_reap();
      lane.drop(Slot::a);
    } else if (c.timed_out || c.fatal) {
      if (h.open) note_running(still_running, h);
      lane.drop(Slot::a);
    } else if (route.retires_worker) {
      lane.retire(Slot::a);
    }
  }
  return still_running;
}

}  // namespace

Result<RowResult> supervise_across(const RouteDef& route, const SuperviseParams& params, Lane& lane,
                                   RemoteSession& remote) {
  if (!remote.broken.empty()) return broken_session_row(route, remote);
  const double start = os::monotonic_seconds();
  std::array<Half, 2> halves = two_halves(route);
  auto peer = os::Channel::pair();
  if (!peer) return std::move(peer).error();
  os::Channel route_connection;  // tcp: the route's peer socket, this side's end
  WorkerProcess* local = nullptr;
  // The serving side's half first: over tcp its job must be on its way before the
  // route connection whose other end the serving side hands to it.
  std::array<Half*, 2> order{&halves[0], &halves[1]};
  if (halves[1].role == remote.served_role) std::swap(order[0], order[1]);
  for (Half* half : order) {
    Half& h = *half;
    if (!h.open) continue;
    int peer_end = h.role == Role::server ? peer->first.fd() : peer->second.fd();
    const std::string job = half_job(route, h.role, params);
    if (h.role == remote.served_role) {
      const bool fds = remote.channel.carries_fds();
      if (auto sent = remote.channel.send(os::MsgType::job, job, fds ? peer_end : -1); !sent) {
        remote.broken = "sending a job failed: " + sent.error().message();
        return broken_session_row(route, remote);
      }
      if (!fds && route.client.main != nullptr) {
        auto opened = open_route_connection(remote);
        if (!opened) {
          remote.broken = "the route connection failed: " + opened.error().message();
          return broken_session_row(route, remote);
        }
        route_connection = std::move(*opened);
      }
      h.remote = true;
      h.channel = &remote.channel;
      h.answered = &remote.answered;
    } else {
      if (route_connection.fd() >= 0) peer_end = route_connection.fd();
      // This side's half runs on slot A, the worker that keeps EGL, whichever half it is.
      for (int attempt = 0; attempt < 2 && local == nullptr; ++attempt) {
        auto w = lane.worker(Slot::a);
        if (!w) return std::move(w).error();
        if ((*w)->control.send(os::MsgType::job, job, peer_end).ok()) local = *w;
        else lane.drop(Slot::a);
      }
      if (local == nullptr) return os_error("send the job to a new worker", EPIPE);
      h.channel = &local->control;
      h.answered = &local->answered;
    }
    h.spawned = true;
    h.warm = true;
  }
  peer->first.owned_fd().reset();
  peer->second.owned_fd().reset();
  route_connection.owned_fd().reset();  // our worker holds its own copy

  Collected c = collect(halves, RouteDeadline{start, params.timeout_s + params.half.soak_s});

  const std::string still_running = settle_across(route, halves, c, lane, local, remote);
  RowResult r = conclude(route, halves, c, params, still_running, start);
  r.worker_hygiene.emplace();
  for (const Half& h : halves) (h.role == Role::server ? r.worker_hygiene->server : r.worker_hygiene->client) = h.hygiene;
  if (!remote.finding.boundary.empty()) {
    std::string facts;
    for (const BoundaryFact& f : remote.finding.boundary) facts += (facts.empty() ? "" : "; ") + f.text;
    r.detail.push_back("boundary: " + facts);
    // What differed may be what broke it: a row that did not pass says so where its reason is read.
    if (r.verdict.status != RowStatus::ok) r.verdict.why += " (across the boundary: " + facts + ")";
  }
  return r;
}

}  // namespace extmem::probe
