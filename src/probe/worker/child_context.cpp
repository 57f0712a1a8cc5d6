#include "probe/worker/child_context.h"

#include "probe/routes.h"
#include "probe/worker/fd_fetch_failure.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "extmem/probe/trace.h"
#include "probe/worker/measure.h"

namespace extmem::probe {

const char* to_string(Role role) { return role == Role::server ? "server" : "client"; }

ChildContext::ChildContext(HalfParams params, os::Channel peer, os::Channel parent)
    : params_(std::move(params)), peer_(std::move(peer)), parent_(std::move(parent)) {
  peer_.set_fd_transport(params_.fd_transport);
}

std::string fd_fetch_failure_text(const Error& failed) {
  std::string s = failed.step;
  if (!failed.code.empty()) s += " -> " + failed.code;
  if (!failed.detail.empty()) s += " (" + failed.detail + ")";
  return s;
}

std::string fd_refusal_reason(const Error& refused) { return "fd transport pidfd: " + fd_fetch_failure_text(refused); }

bool fd_fetch_hit_resource_limit(const Error& failed) {
  return failed.is_errno(EMFILE) || failed.is_errno(ENFILE) || failed.is_errno(ENOMEM);
}

RouteFacts fd_fetch_failure_facts(const Error& failed) {
  // The kernel's refusal is an os error the deployment's permissions decide (failure code: permission).
  if (!fd_fetch_hit_resource_limit(failed))
    return RouteFacts{.unsupported = fd_refusal_reason(failed), .stop_kind = ErrorKind::os};
  return RouteFacts{.fatal = "fd transport pidfd could not be tried: " + fd_fetch_failure_text(failed) +
                             ": a resource limit, not a refusal",
                    .stop_kind = ErrorKind::os};
}

void ChildContext::step(std::string_view name) {
  // With EXTMEM_PROBE_TRACE set, every step is a trace line: where a route's time goes.
  tracing::event(std::string("step ") + params_.row + " " + to_string(params_.role) + ": " + std::string(name));
  (void)parent_.send(os::MsgType::step, name);
  apply_fault(name);
}

void ChildContext::report(const RouteReport& report) {
  RouteReport with = report;
  if (params_.fd_transport == os::FdTransport::pidfd) {
    with.detail.push_back("fd-transport=pidfd fds=" + std::to_string(peer_.log().crossed));
    // The route saw only a missing fd (or a peer that gave up): the transport's
    // refusal is the answer, not whatever failed after it.
    if (const auto& refused = peer_.log().refused) with.facts = fd_fetch_failure_facts(*refused);
  }
  if (measure::enabled()) with.measure = measure::collected();
  (void)parent_.send(os::MsgType::report, encode(with));
}

namespace {
// Whether a fault's ROW names this run: the plain row name hits every run of the
// row (its @mtN and @pidfd twins too, as before); a printed run name
// (ROW@mt2, ROW@pidfd, ROW@mt2@pidfd) hits only the runs that carry each suffix given.
bool fault_names_this_run(std::string_view named, const HalfParams& p) {
  if (named == p.row) return true;  // a row's own name may hold '@' (T4-image-opaque-fd@linear)
  if (named.size() <= p.row.size() || named.substr(0, p.row.size()) != p.row || named[p.row.size()] != '@')
    return false;
  std::string_view rest = named.substr(p.row.size());
  if (rest.size() >= 6 && rest.substr(rest.size() - 6) == "@pidfd") {
    if (p.fd_transport != os::FdTransport::pidfd) return false;
    rest.remove_suffix(6);
  }
  if (rest.empty()) return true;
  return p.memory_type >= 0 && rest == "@mt" + std::to_string(p.memory_type);
}

// Splits EXTMEM_TEST_FAULT=ROW:ROLE:STEP-SUBSTRING:ACTION; the action is empty
// when the variable is unset or does not name this row, role and step.
std::string fault_action(const HalfParams& p, std::string_view step) {
  const char* spec = std::getenv("EXTMEM_TEST_FAULT");
  if (spec == nullptr) return {};
  std::string s(spec);
  std::size_t a = s.find(':'), b = s.find(':', a + 1), c = s.rfind(':');
  if (a == std::string::npos || b == std::string::npos || c <= b) return {};
  if (!fault_names_this_run(s.substr(0, a), p) || s.substr(a + 1, b - a - 1) != to_string(p.role)) return {};
  if (step.find(s.substr(b + 1, c - b - 1)) == std::string_view::npos) return {};
  return s.substr(c + 1);
}
}  // namespace

bool ChildContext::test_fault(std::string_view step, std::string_view action) const {
  if (fault_action(params_, step) != action) return false;
  // Only what the route's entry declares, so the table stays the list of every injected fault.
  const RouteDef* route = find_route(params_.row);
  if (route != nullptr && route->fault(action) != nullptr) return true;
  std::fprintf(stderr, "extmem probe: EXTMEM_TEST_FAULT action \"%.*s\" is not declared by %s (RouteDef::faults): "
               "not injected\n", static_cast<int>(action.size()), action.data(), params_.row.c_str());
  return false;
}

// Test-only (documented in docs/probe.md, "Test-only fault hooks"):
// EXTMEM_TEST_FAULT=ROW:ROLE:STEP-SUBSTRING:ACTION makes this child misbehave
// when it reaches a step whose name contains STEP-SUBSTRING (ROW: the plain row,
// every run of it; or a printed run name, ROW@pidfd / ROW@mtN / ROW@mtN@pidfd,
// that run alone). ACTION is one of
// hang, abort, segv, exit, garbage (a frame with a bad magic), truncate (a frame
// shorter than its header says), badreport (a report that is not JSON), leakfd
// (opens /dev/null and never closes it: the warm worker's hygiene check must name it). The
// faults the routes inject themselves are declared in their entries (RouteDef::faults,
// `extmem probe --list-routes=faults`).
void ChildContext::apply_fault(std::string_view step) {
  const std::string action = fault_action(params_, step);
  if (action == "hang") {
    for (;;) ::pause();
  } else if (action == "abort") {
    std::abort();
  } else if (action == "segv") {
    ::raise(SIGSEGV);
  } else if (action == "exit") {
    ::_exit(7);
  } else if (action == "garbage") {
    const char junk[24] = "not a frame at all....";
    (void)::send(parent_.fd(), junk, sizeof junk, MSG_NOSIGNAL);
  } else if (action == "truncate") {
    std::byte header[os::kFrameHeaderSize];
    os::encode_frame_header(os::MsgType::report, 100, 0, std::span<std::byte, os::kFrameHeaderSize>(header));
    (void)::send(parent_.fd(), header, sizeof header, MSG_NOSIGNAL);
  } else if (action == "badreport") {
    (void)parent_.send(os::MsgType::report, "{\"legs\": 12");
  } else if (action == "leakfd") {
    (void)::open("/dev/null", O_RDONLY | O_CLOEXEC);  // left open on purpose: the worker hygiene check must see it
  }
}

}  // namespace extmem::probe
