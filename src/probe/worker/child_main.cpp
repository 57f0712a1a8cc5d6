// Child mode: one route half in a fresh process (the parent's supervise() starts it).
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "extmem/probe/probe.h"
#include "probe/routes.h"
#include "probe/worker/child_context.h"
#include "probe/worker/drivers.h"
#include "probe/worker/measure.h"

namespace extmem::probe {

int run_child(const ChildArgs& a) {
  const RouteDef* route = find_route(a.row);
  if (route == nullptr || route->server.main == nullptr || (a.role != "server" && a.role != "client")) {
    std::fprintf(stderr, "extmem probe --child: unknown row or role (%s, %s)\n", a.row.c_str(), a.role.c_str());
    return kExitUsage;
  }
  struct stat st {};
  for (int fd : {3, 4}) {
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
      std::fprintf(stderr, "extmem probe --child: fd %d is not a socket; child mode is started by extmem probe itself\n", fd);
      return kExitUsage;
    }
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  // Re-executed through /proc/self/exe, every half would be named "exe" in ps and top.
  ::prctl(PR_SET_NAME, a.role == "server" ? "extmem-server" : "extmem-client");
  ChildParams p{a.row, a.role == "server" ? Role::server : Role::client, a.device_index, Layout{a.size, a.regions_at_end},
                a.soak_s};
  p.memory_type = a.memory_type;
  // Before any driver loads: Mesa takes its GL driver from the environment as libEGL starts.
  drivers::set_gl_request(a.gl_driver, a.device_index);
  if (route->needs.gl) (void)drivers::gl_driver();
  p.image_width = a.image_width;
  p.image_height = a.image_height;
  p.fd_transport = a.fd_transport_pidfd ? os::FdTransport::pidfd : os::FdTransport::scm;
  if (a.measure) measure::enable(a.measure_repeats);
  ChildContext ctx(p, os::Channel(os::UniqueFd(3)), os::Channel(os::UniqueFd(4)));
  return p.role == Role::server ? route->server.main(ctx) : route->client.main(ctx);
}

}  // namespace extmem::probe
