// extmem::probe::find(): phase A, the plan, the rows; nothing printed.
#include <algorithm>
#include <future>
#include <optional>

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "probe/layout.h"
#include "probe/parent/phase_a.h"
#include "probe/parent/plan.h"
#include "probe/parent/schedule.h"

namespace extmem::probe {
namespace {

Error usage(std::string option, std::string detail) {
  return Error{std::move(option), ErrorKind::invalid_argument, {}, std::move(detail)};
}

// --memory-type as a list of memory type indices to run each exporting row with; -1 = auto (the row itself).
// Errors: usage, naming the accepted values and the HOST_VISIBLE types of the device.
Result<std::vector<int>> memory_type_plan(const std::string& value, const vk::DeviceInfo& dev) {
  std::vector<int> host_visible;
  std::string listed;
  for (const auto& t : dev.types)
    if (t.flags & 0x2 /* HOST_VISIBLE */) {
      host_visible.push_back(static_cast<int>(t.index));
      listed += fmt::format("{}{} ({})", listed.empty() ? "" : ", ", t.index, t.flag_names);
    }
  if (value == "auto") return std::vector<int>{-1};
  if (value == "all") {
    std::vector<int> plan{-1};
    plan.insert(plan.end(), host_visible.begin(), host_visible.end());
    return plan;
  }
  int index = -1;
  if (!value.empty() && value.size() <= 2 && value.find_first_not_of("0123456789") == std::string::npos)
    index = std::stoi(value);
  if (index < 0 || std::find(host_visible.begin(), host_visible.end(), index) == host_visible.end())
    return usage("--memory-type", fmt::format("\"{}\" is not accepted: auto, all, or the index of a HOST_VISIBLE memory "
                                              "type of device {}: {}", value, dev.index, listed.empty() ? "none" : listed));
  return std::vector<int>{index};
}

// --size (and --measure-size) must fit the largest heap that has a host-visible memory type.
Status fits_the_heap(const ProbeOptions& o, const vk::DeviceInfo& dev) {
  std::uint64_t largest = 0;
  for (const auto& t : dev.types)
    if (t.flags & 0x2 /* HOST_VISIBLE */) largest = std::max(largest, dev.heaps[t.heap_index].size);
  if (o.size > largest)
    return usage("--size", fmt::format("{} bytes does not fit the largest host-visible heap of device {} ({} bytes); "
                                       "accepted: a multiple of 4096 from {} to {}", o.size, dev.index, largest, kMinSize,
                                       largest));
  if (o.measure && o.measure_size > largest)
    return usage("--measure-size", fmt::format("{} bytes does not fit the largest host-visible heap of device {} ({} "
                                               "bytes); accepted: a multiple of 4096 from 1048576 to {}", o.measure_size,
                                               dev.index, largest, std::min<std::uint64_t>(largest, 1u << 30)));
  return {};
}

}  // namespace

int Findings::exit_code() const {
  bool failed = std::any_of(rows.begin(), rows.end(), [](const RowResult& r) {
    return r.verdict.status == RowStatus::fail || r.verdict.status == RowStatus::partial;
  });
  return failed ? kExitFailed : kExitOk;
}

int exit_code_for(const Error& error) {
  return error.kind == ErrorKind::invalid_argument ? kExitUsage : kExitCannotRun;
}

Result<Findings> find(const ProbeOptions& o, const FindCallbacks& callbacks) {
  const double start = os::monotonic_seconds();
  if (auto v = validate(o); !v) return std::move(v).error();
  Findings f;
  f.phase_a.context = read_run_context();
  auto vulkan = vk::enumerate();
  if (!vulkan) return Error{"cannot run", ErrorKind::unsupported, {}, vulkan.error().message()};
  f.phase_a.vulkan = std::move(*vulkan);
  auto selected = vk::select_device(f.phase_a.vulkan.devices, o.device);
  if (!selected) {
    // Kept whole: the message is the device list; the kind says usage or cannot-run.
    const Error& e = selected.error();
    return Error{{}, e.kind == ErrorKind::invalid_argument ? ErrorKind::invalid_argument : ErrorKind::unsupported, {},
                 e.message()};
  }
  f.phase_a.selected = *selected;
  if (o.list_devices) return f;
  const vk::DeviceInfo& dev = f.phase_a.device();
  if (auto fits = fits_the_heap(o, dev); !fits) return std::move(fits).error();
  auto memory_types = memory_type_plan(o.memory_type, dev);
  if (!memory_types) return std::move(memory_types).error();

  // One row per route, and per memory type for the rows whose exporter picks its
  // memory; the rows phase A can answer are decided here and start no process.
  // CUDA rows wait for the CUDA enumeration, which runs meanwhile.
  std::vector<PlannedRow> planned = plan_rows(o, *memory_types, PhaseAFacts{&dev, nullptr});
  EngineOptions engine;
  engine.base.exe = o.self_exe;
  engine.base.device_index = *selected;
  engine.base.layout = Layout{o.size, o.regions_at_end};
  engine.base.timeout_s = o.timeout_s;
  engine.base.soak_s = o.soak_s;
  engine.measure = o.measure;
  engine.measure_size = o.measure_size;
  engine.measure_repeats = o.measure_repeats;
  engine.jobs = o.measure || o.soak_s > 0 ? 1 : (o.jobs == 0 ? default_jobs() : o.jobs);
  engine.isolate_route = o.isolate == "route";
  // EGL and CUDA start up on their own threads while the workers start theirs:
  // driver start-up, not route work, is most of a run's time.
  auto gles_future = std::async(std::launch::async, [] { return gles::enumerate(); });
  auto cuda_future = std::async(std::launch::async, [] { return cuda::enumerate(); });
  // Start the engine (its warm workers) now unless only CUDA rows are left open:
  // those may all be decided by the CUDA enumeration, and then nothing is started.
  const bool only_cuda_open = std::all_of(planned.begin(), planned.end(), [](const PlannedRow& r) {
    return r.decided || r.route->needs.cuda;
  });
  std::optional<Engine> engine_run;
  if (!only_cuda_open) engine_run.emplace(engine, planned);
  f.phase_a.gles = gles_future.get();
  f.phase_a.cuda = cuda_future.get();
  redecide(planned, o, PhaseAFacts{&dev, &f.phase_a.cuda});
  if (!engine_run) engine_run.emplace(engine, planned);
  if (callbacks.phase_a) callbacks.phase_a(f.phase_a);

  auto executed = engine_run->execute(planned, [&](const RowResult& r) {
    if (callbacks.row) callbacks.row(r);
  });
  if (!executed)
    return Error{"cannot start the route children", ErrorKind::os, {}, executed.error().message()};
  f.rows = std::move(*executed);
  f.seconds = os::monotonic_seconds() - start;
  return f;
}

}  // namespace extmem::probe
