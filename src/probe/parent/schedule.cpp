#include "probe/parent/schedule.h"

#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "probe/parent/measure_row.h"
#include "probe/parent/worker_pool.h"
#include "extmem/probe/trace.h"

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "extmem/os/meminfo.h"

namespace extmem::probe {
namespace {

constexpr int kAnyLane = -1;

// Which lane a row must run on: GL rows on lane 0 and CUDA rows on lane 1 (0 with one lane),
// so only those workers load those drivers; the rest go wherever a lane is free.
int lane_for(const RouteDef& route, unsigned lanes) {
  if (route.needs.gl) return 0;
  if (route.needs.cuda) return lanes > 1 ? 1 : 0;
  return kAnyLane;
}

}  // namespace

struct Engine::State {
  EngineOptions options;
  unsigned lanes = 1;
  std::vector<std::unique_ptr<Lane>> lane;  // empty with --isolate=route
  Status started;                            // a worker that could not be started up front

  // One verdict run (and with --measure the measuring run) of a planned row.
  Result<RowResult> run_row(const PlannedRow& planned, unsigned lane_index) {
    auto once = [&](const SuperviseParams& p) {
      if (lane.empty()) return supervise(*planned.route, p);
      if (options.remote != nullptr) return supervise_across(*planned.route, p, *lane[lane_index], *options.remote);
      return supervise_on_lane(*planned.route, p, *lane[lane_index]);
    };
    SuperviseParams p = options.base;
    p.half.memory_type = planned.memory_type;
    p.half.fd_transport = planned.fd_transport;
    tracing::event("row start " + planned.row);
    auto supervised = once(p);
    tracing::event("row end " + planned.row);
    if (!supervised) return std::move(supervised).error();
    RowResult r = std::move(*supervised);
    r.row = planned.row;
    if (options.measure && planned.route->measured && has_round_trip(r)) {
      // A second run that only measures, at --measure-size: the verdict above is already decided.
      p.half.measure = true;
      p.half.measure_repeats = options.measure_repeats;
      p.half.layout.size = options.measure_size;
      p.half.soak_s = 0;                                          // the verdict run soaked already
      p.timeout_s = std::max(options.base.timeout_s, 300.0);  // 64 MiB through slow (uncached) memory takes a while
      auto measuring = once(p);
      if (!measuring) return std::move(measuring).error();
      r.measure = row_measure(r, *measuring);
    }
    return r;
  }
};

Engine::Engine(const EngineOptions& options, const std::vector<PlannedRow>& may_run) : state_(new State) {
  State& s = *state_;
  s.options = options;
  std::size_t runnable = 0;
  bool client = false, gl = false, cuda = false;
  for (const PlannedRow& r : may_run) {
    if (r.decided) continue;
    ++runnable;
    client = client || r.route->client.main != nullptr;
    gl = gl || r.route->needs.gl;
    cuda = cuda || r.route->needs.cuda;
  }
  s.lanes = options.remote != nullptr ? 1u : static_cast<unsigned>(std::clamp<std::size_t>(runnable, 1, std::max(options.jobs, 1u)));
  if (options.isolate_route || runnable == 0) return;
  for (unsigned i = 0; i < s.lanes; ++i) {
    WorkerWarmth warmth{gl && i == 0, cuda && i == (s.lanes > 1 ? 1u : 0u), options.base.half.gl_driver};
    std::vector<std::string> device_args = {fmt::format("--device-index={}", options.base.half.device_index)};
    if (options.select_device) {
      device_args = {"--worker-select"};  // an empty --device is the default device: no "--worker-device=" then
      if (!options.select_device->empty()) device_args.push_back("--worker-device=" + *options.select_device);
      if (i == 0) device_args.push_back(fmt::format("--phase-a=vulkan{}{}", gl ? ",gl" : "", cuda ? ",cuda" : ""));
    }
    s.lane.push_back(std::make_unique<Lane>(options.base.exe, device_args, warmth));
    // With --peer only slot A runs this side's halves.
    if (auto st = s.lane.back()->start(client && options.remote == nullptr); !st && s.started) s.started = std::move(st);
  }
}

Engine::~Engine() {
  // Every worker first sees its control socket close, so they wind down side by side.
  for (auto& l : state_->lane) l->close();
}

bool Engine::finds_phase_a() const {
  return state_->options.select_device && !state_->lane.empty() && state_->lane[0]->existing(Slot::a) != nullptr;
}

Result<Result<PhaseA>> Engine::phase_a(double timeout_s) {
  State& s = *state_;
  if (!s.started) return s.started.error();
  if (s.lane.empty() || s.lane[0]->existing(Slot::a) == nullptr)
    return Error{"phase A", ErrorKind::invalid_argument, {}, "no worker started to enumerate"};
  auto found = receive_phase_a(*s.lane[0], timeout_s);
  if (found && *found) {
    s.options.base.half.device_index = (*found)->selected;
    for (auto& l : s.lane) l->set_device_index((*found)->selected);
  }
  return found;
}

Result<std::vector<RowResult>> Engine::execute(const std::vector<PlannedRow>& plan, const RowSink& sink) {
  State& s = *state_;
  if (!s.started) return s.started.error();
  std::vector<std::optional<RowResult>> done(plan.size());
  std::vector<bool> taken(plan.size(), false);
  std::size_t next_to_emit = 0;
  std::optional<Error> failure;
  std::mutex m;

  // Hands rows to the sink in plan order; called with `m` held.
  auto emit_ready = [&] {
    while (next_to_emit < plan.size() && done[next_to_emit]) {
      if (sink) sink(*done[next_to_emit]);
      ++next_to_emit;
    }
  };
  {
    std::lock_guard lock(m);
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (!plan[i].decided) continue;
      RowResult r;
      r.row = plan[i].row;
      r.verdict = *plan[i].decided;
      done[i] = std::move(r);
      taken[i] = true;
    }
    emit_ready();
  }
  auto lane_loop = [&](unsigned lane_index) {
    for (;;) {
      std::size_t pick = plan.size();
      {
        std::lock_guard lock(m);
        if (failure) return;
        // A row that retires its workers goes last on its lane: no other row may follow it there.
        for (bool retiring : {false, true}) {
          for (std::size_t i = 0; i < plan.size() && pick == plan.size(); ++i) {
            if (taken[i] || plan[i].route->retires_worker != retiring) continue;
            int want = lane_for(*plan[i].route, s.lanes);
            if (want == kAnyLane || want == static_cast<int>(lane_index)) pick = i;
          }
        }
        if (pick < plan.size()) taken[pick] = true;
      }
      if (pick == plan.size()) return;
      auto r = s.run_row(plan[pick], lane_index);
      std::lock_guard lock(m);
      if (!r) {
        if (!failure) failure = std::move(r).error();
        return;
      }
      done[pick] = std::move(*r);
      emit_ready();
    }
  };
  if (s.lanes == 1) {
    lane_loop(0);
  } else {
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < s.lanes; ++i) threads.emplace_back(lane_loop, i);
    for (std::thread& t : threads) t.join();
  }
  if (failure) return std::move(*failure);
  std::vector<RowResult> rows;
  rows.reserve(plan.size());
  for (auto& r : done) rows.push_back(std::move(*r));
  return rows;
}

unsigned default_jobs() { return 1; }

unsigned jobs_limit() {
  unsigned jobs = 64;
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) jobs = std::min<unsigned>(jobs, CPU_COUNT(&set));
  if (const auto available = os::mem_available_bytes())
    jobs = static_cast<unsigned>(std::min<std::uint64_t>(jobs, *available / (std::uint64_t{512} << 20)));
  return std::max(jobs, 1u);
}

Result<std::vector<RowResult>> execute_rows(const std::vector<PlannedRow>& plan, const EngineOptions& options,
                                            const RowSink& sink) {
  Engine engine(options, plan);
  return engine.execute(plan, sink);
}

}  // namespace extmem::probe
