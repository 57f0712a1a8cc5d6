#include "extmem/probe/worker.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "extmem/probe/probe.h"
#include "probe/job_codec.h"
#include "probe/routes.h"
#include "probe/worker/child_context.h"
#include "probe/worker/drivers.h"
#include "probe/worker/measure.h"

namespace extmem::probe {
namespace {

constexpr int kPeerFd = 3;
constexpr int kReportFd = 4;
// The parent sends the job right after the spawn: a wait this long means it is gone.
constexpr int kJobWaitMs = 30'000;

int refuse(const std::string& why) {
  std::fprintf(stderr, "extmem probe --child: %s\n", why.c_str());
  return kExitUsage;
}

}  // namespace

int run_fresh_child(std::string_view row, std::string_view role) {
  struct stat st {};
  for (int fd : {kPeerFd, kReportFd}) {
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
      return refuse("fd " + std::to_string(fd) + " is not a socket; child mode is started by extmem probe itself");
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  os::Channel parent{os::UniqueFd(kReportFd)};
  auto frame = parent.recv(kJobWaitMs);
  if (!frame) return refuse("no job from the parent: " + frame.error().message());
  if (frame->type != os::MsgType::job || frame->fd.valid()) return refuse("expected a job frame without an fd");
  auto job = decode_job(frame->payload);
  if (!job) return refuse(job.error().message());
  HalfParams p = std::move(*job);
  if (p.row != row || to_string(p.role) != role)
    return refuse("the job is for " + p.row + " " + to_string(p.role) + ", the command line says " + std::string(row) +
                  " " + std::string(role));
  const RouteDef* route = find_route(p.row);
  const RoleMain half = p.role == Role::server ? route->server.main : route->client.main;
  if (half == nullptr) return refuse("no " + std::string(to_string(p.role)) + " half for row \"" + p.row + "\"");
  // Re-executed through /proc/self/exe, every half would be named "exe" in ps and top.
  ::prctl(PR_SET_NAME, p.role == Role::server ? "extmem-server" : "extmem-client");
  // Before any driver loads: Mesa takes its GL driver from the environment as libEGL starts.
  drivers::set_gl_request(p.gl_driver, p.device_index);
  if (route->needs.gl) (void)drivers::gl_driver();
  if (p.measure) measure::enable(p.measure_repeats);
  ChildContext ctx(p, os::Channel(os::UniqueFd(kPeerFd)), std::move(parent));
  return half(ctx);
}

}  // namespace extmem::probe
