#include "probe/worker/worker_main.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "extmem/os/ipc.h"
#include "extmem/probe/probe.h"
#include "probe/done_codec.h"
#include "probe/job_codec.h"
#include "probe/phase_a_wire.h"
#include "probe/routes.h"
#include "extmem/probe/trace.h"
#include "probe/worker/child_context.h"
#include "probe/worker/drivers.h"
#include "probe/worker/measure.h"

namespace extmem::probe {
namespace {

constexpr int kControlFd = 3;

// fd number -> readlink target ("?" when unreadable), of every fd but the one listing them.
std::map<std::string, std::string> fd_table() {
  std::map<std::string, std::string> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    char target[512];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    fds[e->d_name] = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string("?");
  }
  ::closedir(dir);
  return fds;
}

}  // namespace

HygieneSnapshot HygieneSnapshot::take() {
  HygieneSnapshot s;
  s.fds_ = fd_table();
  drivers::LiveObjects l = drivers::live_objects();
  s.live_ = {{"vk_buffers", l.vk_buffers}, {"vk_memories", l.vk_memories}, {"gl_shared_buffers", l.gl_buffers}};
  return s;
}

Hygiene HygieneSnapshot::compare_to(const HygieneSnapshot& later) const {
  Hygiene h;
  h.fds = static_cast<std::uint32_t>(fds_.size());
  for (const auto& [fd, target] : later.fds_)
    if (auto it = fds_.find(fd); it == fds_.end() || it->second != target) h.left_open.push_back(fd + " -> " + target);
  for (const auto& [fd, target] : fds_)
    if (auto it = later.fds_.find(fd); it == later.fds_.end() || it->second != target) h.closed.push_back(fd + " -> " + target);
  for (const auto& [name, count] : later.live_)
    if (count != live_.at(name)) h.live_delta[name] = count - live_.at(name);
  return h;
}

namespace {

// What the warm-up leaves: the Vulkan device index every job uses, phase A's
// findings (when asked for), and the device's UUID for the CUDA warm-up.
struct WarmUp {
  std::uint32_t device_index = 0;
  PhaseAFindings found;
  std::optional<std::string> device_uuid;
};

// The warm-up, while the parent waits for phase A or finishes its own. Failures are
// kept by drivers.h and met by the first route that needs the driver, as in a fresh child.
// Phase A starts only the drivers a selected row uses (the parent says which with
// --warm): on the H200 CUDA's start-up alone lengthened a run without CUDA rows by
// 0.15 s (docs/probe-engine.md). CUDA's start-up (dlopen, cuInit) runs on its own
// thread while Vulkan and EGL start on this one.
WarmUp warm_up(const WorkerArgs& a) {
  WarmUp w;
  w.device_index = a.device_index;
  std::future<Result<cuda::Enumeration>> cuda_found;
  if (a.phase_a && a.phase_a_cuda)
    cuda_found = std::async(std::launch::async, [] {
      tracing::event("cuda enumeration start");
      auto e = drivers::cuda_enumeration();
      tracing::event("cuda enumeration end");
      return e;
    });
  if (a.select || a.phase_a) {
    auto instance = drivers::vulkan_instance();
    tracing::event("vulkan instance");
    w.found.vulkan = instance ? vk::enumerate(**instance) : Result<vk::VulkanEnumeration>(instance.error());
    if (w.found.vulkan) w.found.selected = vk::select_device(w.found.vulkan->devices, a.select.value_or(""));
    if (w.found.selected) w.device_index = *w.found.selected;
    tracing::event("vulkan enumerated");
  }
  // The GL driver is chosen here, once the device is known and before libEGL (and the
  // lavapipe device, with its threads) is loaded: Mesa reads the environment as it starts.
  drivers::set_gl_request(a.gl_driver, w.device_index);
  if (!drivers::decide_gl_driver().env.empty() && cuda_found.valid())
    w.found.cuda = cuda_found.get();  // setenv must not race cuInit's getenv; CUDA has then already started
  w.found.gl_driver = drivers::gl_driver();
  auto device = drivers::vulkan_device(w.device_index, {});
  tracing::event("vulkan device");
  if (device) w.device_uuid = (*device)->device_uuid();
  if (a.warm_gl || (a.phase_a && a.phase_a_gl)) {
    auto egl = drivers::egl_context();
    w.found.gles = egl ? Result<gles::GlesInfo>(gles::describe(**egl)) : Result<gles::GlesInfo>(egl.error());
    tracing::event("egl context");
  } else {
    w.found.gles = driver_not_started("GLES");
  }
  if (a.phase_a) {
    if (cuda_found.valid())
      w.found.cuda = cuda_found.get();
    else if (!a.phase_a_cuda)
      w.found.cuda = driver_not_started("CUDA");
  }
  return w;
}

// A job to run: its half's parameters and route, and the peer socket.
struct Job {
  HalfParams params;
  const RouteDef* route = nullptr;
  os::UniqueFd peer;
};

// The job a frame carries, with this worker's device and GL driver (the drivers
// are open already), or why it is none: not a job frame with the peer socket,
// a job that does not decode, or a row and role with no half.
std::optional<Job> read_job(os::Frame& frame, std::uint32_t device_index, const std::string& gl_driver,
                            std::string& why) {
  if (frame.type != os::MsgType::job || !frame.fd.valid()) {
    why = "expected a job frame with the peer socket";
    return std::nullopt;
  }
  auto job = decode_job(frame.payload);
  if (!job) {
    why = job.error().message();
    return std::nullopt;
  }
  Job j{std::move(*job), nullptr, std::move(frame.fd)};
  j.params.device_index = device_index;
  j.params.gl_driver = gl_driver;
  j.route = find_route(j.params.row);
  if (j.route == nullptr || j.route->server.main == nullptr ||
      (j.params.role == Role::client && j.route->client.main == nullptr)) {
    why = "no " + std::string(to_string(j.params.role)) + " half for row \"" + j.params.row + "\"";
    return std::nullopt;
  }
  return j;
}

// Runs the job's half; its peer socket and report channel close on return, as
// a fresh child's would at exit. Returns the half's exit code.
int run_half(Job& job) {
  const HalfParams& params = job.params;
  os::UniqueFd report(::fcntl(kControlFd, F_DUPFD_CLOEXEC, 0));
  if (params.measure) measure::enable(params.measure_repeats);
  ChildContext ctx(params, os::Channel(std::move(job.peer)), os::Channel(std::move(report)));
  // Named for the half it runs now, so ps, top and extmem watch tell them apart.
  ::prctl(PR_SET_NAME, params.role == Role::server ? "extmem-server" : "extmem-client");
  const std::string what = params.row + " " + std::string(to_string(params.role));
  tracing::event("job start " + what);
  const int code = params.role == Role::server ? job.route->server.main(ctx) : job.route->client.main(ctx);
  tracing::event("job end " + what);
  ::prctl(PR_SET_NAME, "extmem-worker");
  measure::disable();
  return code;
}

}  // namespace

int run_worker(const WorkerArgs& a) {
  struct stat st {};
  if (::fstat(kControlFd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "extmem probe --worker: fd 3 is not a socket; worker mode is started by extmem probe itself\n");
    return kExitUsage;
  }
  ::fcntl(kControlFd, F_SETFD, FD_CLOEXEC);
  ::prctl(PR_SET_NAME, "extmem-worker");
  tracing::event(a.phase_a ? "worker start (phase A)" : "worker start");
  os::Channel control{os::UniqueFd(kControlFd)};
  const WarmUp w = warm_up(a);
  if (a.phase_a) {
    if (!control.send(os::MsgType::findings, encode_phase_a(settle_phase_a(w.found))).ok()) return 0;
    tracing::event("phase A sent");
  }
  // The primary context is retained beside the first routes (the CUDA rows come last);
  // a CUDA route that starts sooner retains it itself, the driver is thread-safe.
  std::thread cuda_warm;
  std::atomic<bool> warming{false};
  if (a.warm_cuda && w.device_uuid) {
    warming = true;
    cuda_warm = std::thread([&warming, uuid = *w.device_uuid] {
      tracing::event("cuda warm start");
      drivers::keep_cuda_warm(uuid);
      tracing::event("cuda warm end");
      warming = false;
    });
  }
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{cuda_warm};

  for (;;) {
    // Idle state: what every route must leave behind (its peer socket arrives with the job).
    const HygieneSnapshot before = HygieneSnapshot::take();
    const bool overlapped_warm_up = warming;  // the CUDA warm-up may open fds of its own meanwhile
    auto frame = control.recv(-1);
    if (!frame) tracing::event("worker sees EOF");
    if (!frame) return 0;  // the parent closed the control socket (or is gone): the run is over
    std::string why;
    auto job = read_job(*frame, w.device_index, a.gl_driver, why);
    if (!job) {
      std::fprintf(stderr, "extmem probe --worker: %s\n", why.c_str());
      return kExitUsage;
    }
    const int code = run_half(*job);
    if (overlapped_warm_up && cuda_warm.joinable()) cuda_warm.join();
    DoneMessage done{code, before.compare_to(HygieneSnapshot::take())};
    done.hygiene.overlapped_warm_up = overlapped_warm_up;  // a difference may be the warm-up's, not the route's
    done.hygiene.pid = ::getpid();  // tells a replaced worker from the one before
    if (!control.send(os::MsgType::done, encode_done(done)).ok()) return 0;
  }
}

}  // namespace extmem::probe
