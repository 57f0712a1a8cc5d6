// extmem::probe::find(): phase A, the plan, the rows; nothing printed.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "extmem/os/endpoint.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "probe/gl_driver.h"
#include "probe/layout.h"
#include "probe/phase_a_wire.h"
#include "probe/serve/session_codec.h"
#include "probe/parent/fd_check.h"
#include "probe/parent/phase_a.h"
#include "extmem/probe/trace.h"
#include "probe/parent/plan.h"
#include "probe/parent/remote.h"
#include "probe/parent/runtime_dir.h"
#include "probe/parent/schedule.h"

namespace extmem::probe {
namespace {

// Phase A is the drivers' start-up in the first worker, not a route: --timeout, the
// per-route limit, may be shorter than a slow start (a sanitizer build, a busy
// machine, --timeout=1), which must not end the run. It still ends a hung start.
constexpr double kPhaseAMinTimeoutS = 60;
// A server answers a hello once its own phase A is done: a server started just before
// its peer (bench/serve_bench.py, the tests) may still be starting its drivers, which
// serve bounds at 120 s.
constexpr double kPeerHandshakeTimeoutS = 120;

Error plan_usage(std::string option, std::string detail) {
  return Error{std::move(option), ErrorKind::invalid_argument, {}, std::move(detail)};
}

// --memory-type as a list of memory type indices to run each exporting row with; -1 = auto (the row itself).
// Errors: usage, naming the accepted values and the HOST_VISIBLE types of the device.
Result<std::vector<int>> memory_type_plan(const MemoryTypeChoice& choice, const vk::DeviceInfo& dev) {
  std::vector<int> host_visible;
  std::string listed;
  for (const auto& t : dev.types)
    if (t.flags & 0x2 /* HOST_VISIBLE */) {
      host_visible.push_back(static_cast<int>(t.index));
      listed += fmt::format("{}{} ({})", listed.empty() ? "" : ", ", t.index, t.flag_names);
    }
  if (choice.mode == MemoryTypeChoice::Mode::automatic) return std::vector<int>{-1};
  if (choice.mode == MemoryTypeChoice::Mode::all) {
    std::vector<int> plan{-1};
    plan.insert(plan.end(), host_visible.begin(), host_visible.end());
    return plan;
  }
  const int index = static_cast<int>(choice.type_index);
  if (std::find(host_visible.begin(), host_visible.end(), index) == host_visible.end())
    return plan_usage("--memory-type", fmt::format("\"{}\" is not accepted: auto, all, or the index of a HOST_VISIBLE memory "
                                              "type of device {}: {}", choice.type_index, dev.index, listed.empty() ? "none" : listed));
  return std::vector<int>{index};
}

// --size (and --measure-size) must fit the largest heap that has a host-visible memory type.
Status fits_the_heap(const ProbeOptions& o, const vk::DeviceInfo& dev) {
  std::uint64_t largest = 0;
  for (const auto& t : dev.types)
    if (t.flags & 0x2 /* HOST_VISIBLE */) largest = std::max(largest, dev.heaps[t.heap_index].size);
  if (o.size > largest)
    return plan_usage("--size", fmt::format("{} bytes does not fit the largest host-visible heap of device {} ({} bytes); "
                                       "accepted: a multiple of 4096 from {} to {}", o.size, dev.index, largest, kMinSize,
                                       largest));
  if (o.measure && o.measure_size > largest)
    return plan_usage("--measure-size", fmt::format("{} bytes does not fit the largest host-visible heap of device {} ({} "
                                               "bytes); accepted: a multiple of 4096 from 1048576 to {}", o.measure_size,
                                               dev.index, largest, std::min<std::uint64_t>(largest, 1u << 30)));
  return {};
}

// Phase A in this process: what the warm worker would have sent, found here
// (--isolate=route, --list-devices, or nothing to run). CUDA starts up on its own
// thread while Vulkan enumerates; EGL too, unless --gl-driver=auto must see the
// selected Vulkan device first (then EGL follows the enumeration, as in the worker).
// The GL driver goes into this process's environment, which the route children inherit.
PhaseAFindings local_phase_a(const std::string& device, const std::string& gl_request, bool gl, bool cuda) {
  PhaseAFindings f;
  if (!gl) f.gles = driver_not_started("GLES");
  if (!cuda) f.cuda = driver_not_started("CUDA");
  const char* user = std::getenv("MESA_LOADER_DRIVER_OVERRIDE");
  const bool needs_device = gl_request == "auto" && user == nullptr;
  const std::string vendor_file = mesa_egl_vendor_file();
  std::future<Result<gles::GlesInfo>> gles_future;
  if (!needs_device) {
    f.gl_driver = choose_gl_driver(gl_request, std::nullopt, user, vendor_file);
    apply_gl_driver(f.gl_driver);  // before any other thread runs: setenv must not race a getenv
    if (gl) gles_future = std::async(std::launch::async, [] { return gles::enumerate(); });
  }
  std::future<Result<cuda::Enumeration>> cuda_future;
  if (cuda) cuda_future = std::async(std::launch::async, [] { return cuda::enumerate(); });
  f.vulkan = vk::enumerate();
  if (f.vulkan) f.selected = vk::select_device(f.vulkan->devices, device);
  if (needs_device) {
    std::optional<VulkanDriverFacts> facts;
    if (f.vulkan && f.selected) facts = facts_of(f.vulkan->devices.at(*f.selected));
    f.gl_driver = choose_gl_driver(gl_request, facts, user, vendor_file);
    if (!f.gl_driver.env.empty() && cuda_future.valid()) f.cuda = cuda_future.get();  // CUDA's thread done before setenv
    apply_gl_driver(f.gl_driver);
    if (gl) gles_future = std::async(std::launch::async, [] { return gles::enumerate(); });
  }
  if (gles_future.valid()) f.gles = gles_future.get();
  if (cuda_future.valid()) f.cuda = cuda_future.get();
  return f;
}


}  // namespace

int Findings::exit_code() const {
  bool failed = std::any_of(rows.begin(), rows.end(), [](const RowResult& r) {
    return is_failure(r.verdict.status);
  });
  return failed ? kExitFailed : kExitOk;
}

int exit_code_for(const Error& error) {
  return error.kind == ErrorKind::invalid_argument ? kExitUsage : kExitCannotRun;
}

Result<Findings> find(const ProbeOptions& o, const FindCallbacks& callbacks) {
  const double start = os::monotonic_seconds();
  if (auto v = validate(o); !v) return std::move(v).error();
  // --peer: the session opens while this side's workers start (the handshake waits for
  // the serving side's phase A when it is starting too); the rows need it after phase A.
  std::future<Result<RemoteSession>> opening;
  RemoteSession remote;  // the session once open; the engine reads it only when rows run
  if (!o.peer.empty() && !o.list_devices)
    opening = std::async(std::launch::async, [endpoint = *os::parse_endpoint(o.peer)] {
      return open_session(endpoint, new_run_id(), kPeerHandshakeTimeoutS);
    });
  // The worker executable first: nothing starts when there is none, and never this program unless named.
  std::string worker;
  if (!o.list_devices) {
    auto found_worker = find_worker(o);
    if (!found_worker) return std::move(found_worker).error();
    worker = std::move(*found_worker);
  }
  // First, so that it outlives every child this call starts.
  const PrivateRuntimeDir runtime_dir;
  Findings f;
  f.phase_a.context = read_run_context();
  runtime_dir.describe(f.phase_a.context);
  // One short-lived child, beside the workers' driver start-up rather than after it.
  std::future<FdTransportFinding> fd_check;
  if (!o.list_devices) fd_check = std::async(std::launch::async, [worker] { return check_fd_transport(worker); });

  EngineOptions engine;
  engine.base.exe = worker;
  const double timeout_s = std::chrono::duration<double>(o.timeout).count(), soak_s = std::chrono::duration<double>(o.soak).count();
  engine.base.timeout_s = timeout_s;
  engine.base.half.layout = Layout{o.size, o.regions_at_end};
  engine.base.half.soak_s = soak_s;
  engine.base.half.image_width = o.image_width;
  engine.base.half.image_height = o.image_height;
  engine.measure = o.measure;
  engine.measure_size = o.measure_size;
  engine.measure_repeats = o.measure_repeats;
  engine.jobs = o.measure || o.soak > std::chrono::nanoseconds(0) ? 1 : (o.jobs == 0 ? default_jobs() : std::min(o.jobs, jobs_limit()));
  engine.isolate_route = o.isolate == Isolation::route;
  if (opening.valid()) engine.remote = &remote;
  engine.base.half.expect_transport = to_string(o.expect_transport);
  engine.base.half.gl_driver = to_string(o.gl_driver);  // warm workers each decide what auto means before their EGL starts
  // Warm workers start first and the first one enumerates phase A, so this process
  // loads no driver: driver start-up, not route work, is most of a run's time and memory.
  // Before phase A only the filters decide rows (which drivers the workers open up front).
  std::optional<Engine> warm;
  std::optional<Result<PhaseA>> found;  // the run's phase A, or the error that ends the run
  const std::vector<PlannedRow> early_plan = plan_rows(o, {-1}, PhaseAFacts{});
  bool uses_gl = false, uses_cuda = false;  // EGL and CUDA start only for a row that may use them
  for (const PlannedRow& r : early_plan) {
    if (r.decided) continue;
    uses_gl = uses_gl || r.route->needs.gl;
    uses_cuda = uses_cuda || r.route->needs.cuda;
  }
  if (!o.list_devices && !engine.isolate_route) {
    EngineOptions early = engine;
    early.select_device = o.device;
    warm.emplace(early, early_plan);
    if (warm->finds_phase_a()) {
      auto a = warm->phase_a(std::max(timeout_s, kPhaseAMinTimeoutS));
      tracing::event("phase A received");
      if (!a) return Error{"cannot run", ErrorKind::unsupported, {}, a.error().message()};
      found = std::move(*a);
    }
  }
  if (!found) {
    found = settle_phase_a(local_phase_a(o.device, to_string(o.gl_driver), uses_gl, uses_cuda));
    // Fresh children put in place what phase A chose.
    if (*found) engine.base.half.gl_driver = (*found)->gl_driver.served;
  }
  if (!*found) return std::move(*found).error();
  PhaseA& a = **found;
  f.phase_a.vulkan = std::move(a.vulkan);
  f.phase_a.selected = a.selected;
  if (o.list_devices) return f;  // the Vulkan part only
  const vk::DeviceInfo& dev = f.phase_a.device();
  if (auto fits = fits_the_heap(o, dev); !fits) return std::move(fits).error();
  if (std::max(o.image_width, o.image_height) > dev.max_image_dimension_2d)
    return plan_usage("--image-size", fmt::format("{}x{} is not accepted: each side from 1 to {} (maxImageDimension2D of device {})",
                                                  o.image_width, o.image_height, dev.max_image_dimension_2d, dev.index));
  auto memory_types = memory_type_plan(o.memory_type, dev);
  if (!memory_types) return std::move(memory_types).error();
  engine.base.half.device_index = f.phase_a.selected;
  f.phase_a.gl_driver = std::move(a.gl_driver);
  f.phase_a.gles = std::move(a.gles);
  f.phase_a.cuda = std::move(a.cuda);
  f.phase_a.fd_transport = fd_check.get();
  if (opening.valid()) {
    auto session = opening.get();
    if (!session)
      return Error{"cannot run", ErrorKind::unsupported, {}, fmt::format("--peer={}: {}", o.peer, session.error().message())};
    remote = std::move(*session);
    if (auto same = same_device(f.phase_a, remote.peer_phase_a); !same) return std::move(same).error();
    const std::size_t largest = o.measure ? std::max(o.size, o.measure_size) : o.size;
    if (largest > remote.max_size)
      return plan_usage(largest == o.size ? "--size" : "--measure-size",
                        fmt::format("{} bytes is above the serving side's --max-size={} bytes; accepted: a size up to that",
                                    largest, remote.max_size));
    f.phase_a.peer = remote.finding;
  }
  if (callbacks.phase_a) callbacks.phase_a(f.phase_a);

  // One row per route, and per memory type for the rows whose exporter picks its
  // memory; the rows phase A can answer are decided here and start no process.
  std::vector<PlannedRow> planned = plan_rows(o, *memory_types, PhaseAFacts{&dev, &f.phase_a.cuda});
  if (engine.remote != nullptr) decide_across(planned, remote.finding.boundary, remote.endpoint);
  if (!warm) warm.emplace(engine, planned);
  auto executed = warm->execute(planned, [&](const RowResult& r) {
    if (callbacks.row) callbacks.row(r);
  });
  if (!executed)
    return Error{"cannot start the route children", ErrorKind::os, {}, executed.error().message()};
  f.rows = std::move(*executed);
  tracing::event("rows done");
  f.seconds = os::monotonic_seconds() - start;
  return f;
}

}  // namespace extmem::probe
