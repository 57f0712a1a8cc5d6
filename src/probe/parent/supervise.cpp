#include "extmem/os/clock.h"
#include "probe/parent/supervise.h"

#include <poll.h>

#include <array>
#include <optional>

#include <fmt/format.h>

#include "extmem/os/child.h"
#include "extmem/os/ipc.h"
#include "probe/route_report.h"

namespace extmem::probe {
namespace {

struct Half {
  Role role;
  os::ChildProcess child;
  os::Channel reports;   // our end of its report socket
  bool open = true;      // report socket not yet at EOF
  bool spawned = false;
  std::string last_step = "start";
  std::optional<os::ExitInfo> exit;
};

std::vector<std::string> child_argv(const RouteDef& route, Role role, const SuperviseParams& p) {
  std::vector<std::string> argv = {p.exe, "probe", fmt::format("--child={}", route.row),
                                   fmt::format("--role={}", to_string(role)),
                                   fmt::format("--device-index={}", p.device_index),
                                   fmt::format("--size={}", p.layout.size)};
  if (p.layout.regions_at_end) argv.emplace_back("--regions-at-end");
  if (p.soak_s > 0) argv.push_back(fmt::format("--soak={}", p.soak_s));
  if (p.measure) {
    argv.emplace_back("--measure");
    argv.push_back(fmt::format("--measure-repeats={}", p.measure_repeats));
  }
  if (p.memory_type >= 0) argv.push_back(fmt::format("--memory-type-index={}", p.memory_type));
  return argv;
}

}  // namespace

Result<RowResult> supervise(const RouteDef& route, const SuperviseParams& params) {
  RowResult result;
  result.row = std::string(route.row);
  const double start = os::monotonic_seconds();

  auto peer = os::Channel::pair();
  if (!peer) return std::move(peer).error();
  std::array<Half, 2> halves{Half{Role::server, {}, {}}, Half{Role::client, {}, {}}};
  if (route.client.main == nullptr) {
    halves[1].open = false;  // single-process route: no client half
    halves[1].last_step = "none (single-process route)";
  }
  for (Half& h : halves) {
    if (!h.open) continue;
    auto rep = os::Channel::pair();
    if (!rep) return std::move(rep).error();
    int peer_end = h.role == Role::server ? peer->first.fd() : peer->second.fd();
    auto child = os::ChildProcess::spawn(params.exe, child_argv(route, h.role, params), {peer_end, rep->second.fd()});
    if (!child) return std::move(child).error();
    h.child = std::move(*child);
    h.spawned = true;
    h.reports = std::move(rep->first);
    // rep->second (the child's end) closes here, so EOF on ours means the child is gone.
  }
  peer->first.owned_fd().reset();
  peer->second.owned_fd().reset();

  std::optional<RouteReport> report;
  std::optional<std::string> fatal;
  bool timed_out = false;
  const double deadline = start + params.timeout_s + params.soak_s;

  while ((halves[0].open || halves[1].open) && !fatal) {
    std::array<pollfd, 2> fds{};
    std::array<Half*, 2> which{};
    nfds_t n = 0;
    for (Half& h : halves) {
      if (!h.open) continue;
      fds[n] = {h.reports.fd(), POLLIN, 0};
      which[n++] = &h;
    }
    const double left = deadline - os::monotonic_seconds();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    int r = ::poll(fds.data(), n, static_cast<int>(left * 1000) + 1);
    if (r < 0 && errno != EINTR) {
      fatal = fmt::format("parent: poll failed: {}", errno_code(errno));
      break;
    }
    for (nfds_t i = 0; i < n && r > 0; ++i) {
      if (fds[i].revents == 0) continue;
      Half& h = *which[i];
      auto frame = h.reports.recv(0);
      if (!frame) {
        const Error& e = frame.error();
        if (e.kind == ErrorKind::timeout) continue;
        if (e.kind == ErrorKind::protocol && e.detail == "peer closed the socket") {
          h.open = false;
        } else {
          fatal = fmt::format("malformed message from {} after step \"{}\": {}", to_string(h.role), h.last_step,
                              e.message());
        }
        continue;
      }
      if (frame->type == os::MsgType::step) {
        h.last_step = frame->payload.substr(0, 200);
      } else if (frame->type == os::MsgType::report) {
        auto decoded = decode_report(frame->payload);
        if (!decoded) {
          fatal = fmt::format("malformed report from {}: {}", to_string(h.role), decoded.error().message());
        } else if (!report) {
          report = std::move(*decoded);
        }
      } else {
        fatal = fmt::format("unexpected message type {} from {}", static_cast<int>(frame->type), to_string(h.role));
      }
    }
  }

  // Reap: give halves that closed their sockets a moment to exit, then kill whatever is left.
  std::string still_running;
  for (Half& h : halves) {
    if (!timed_out && !fatal && !h.open) {
      auto info = h.child.wait(2000);
      if (info) {
        h.exit = *info;
        continue;
      }
    }
    if (h.child.pid() > 0) {
      if (h.open) still_running += fmt::format("{}{}: {}", still_running.empty() ? "" : "; ", to_string(h.role), h.last_step);
      h.child.kill_and_reap();
    }
  }
  result.server_step = halves[0].last_step;
  result.client_step = halves[1].last_step;
  result.seconds = os::monotonic_seconds() - start;

  RouteFacts facts;
  if (timed_out) {
    facts.fatal = fmt::format("timeout after {:g} s in {}", params.timeout_s, still_running.empty() ? "route" : still_running);
  } else if (fatal) {
    facts.fatal = *fatal;
  } else {
    for (const Half& h : halves) {
      if (h.exit && h.exit->signaled) {
        facts.fatal = fmt::format("child died: {} in {}: {}", h.exit->describe(), to_string(h.role), h.last_step);
        break;
      }
    }
    if (!facts.fatal && !report) {
      std::string exits;
      for (const Half& h : halves)
        if (h.spawned)
          exits += fmt::format("{}{} {} after \"{}\"", exits.empty() ? "" : ", ", to_string(h.role),
                             h.exit ? h.exit->describe() : "killed", h.last_step);
      facts.fatal = "no report from the route (" + exits + ")";
    }
  }
  if (facts.fatal) {
    result.verdict = decide(facts, {});
    if (report) result.legs = report->legs;
    return result;
  }
  result.legs = report->legs;
  result.detail = report->detail;
  result.soak = report->facts.soak;
  result.measure = report->measure;
  for (const Half& h : halves) {
    if (h.exit && h.exit->exited && h.exit->code != 0)
      result.detail.push_back(fmt::format("{} exited with code {}", to_string(h.role), h.exit->code));
  }
  result.verdict = decide(report->facts, report->legs);
  return result;
}

}  // namespace extmem::probe
