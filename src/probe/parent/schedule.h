// The parent's engine boundary: turns planned rows into RowResults. Which rows
// exist, their names and the decisions phase A already made come from the plan;
// how the route halves run (fresh processes or warm workers, how many side by
// side) is decided here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/verdict.h"
#include "probe/parent/row_result.h"
#include "probe/parent/supervise.h"
#include "probe/phase_a_wire.h"
#include "probe/routes.h"

namespace extmem::probe {

/// One row of the run, in print order.
struct PlannedRow {
  std::string row;                 ///< printed name (the route's row, plus "@mt<i>" for a memory-type twin)
  const RouteDef* route = nullptr; ///< never null
  int memory_type = -1;            ///< exporting side's memory type index; -1 = auto
  os::FdTransport fd_transport = os::FdTransport::scm;  ///< pidfd: the "@pidfd" twin (--fd-transport)
  std::optional<Verdict> decided;  ///< set: the answer is known without starting anything (SKIP, UNSUPPORTED)
};

struct EngineOptions {
  SuperviseParams base;                 ///< exe, device index, layout, timeout, soak of the verdict runs
  bool measure = false;                 ///< a second, measuring run per row with a round-tripped leg
  std::size_t measure_size = kDefaultMeasureSize;    ///< bytes of the measuring run's allocation
  unsigned measure_repeats = kDefaultMeasureRepeats; ///< samples per figure
  unsigned jobs = 1;                    ///< routes side by side (1 with measure or soak: figures run alone)
  bool isolate_route = false;           ///< fresh processes for every route instead of warm workers
  /// Set (warm workers only): the device is not chosen yet; workers choose it with
  /// vk::select_device(…, *select_device) and lane 0's first worker enumerates phase A
  /// for the parent (Engine::phase_a), so the parent loads no driver itself.
  std::optional<std::string> select_device;
  /// --peer: the session with the serving side, which runs one half of every route
  /// (supervise_across); one lane, whose slot A runs this side's half. Borrowed.
  RemoteSession* remote = nullptr;
};

/// The default --jobs: one lane. Measured (bench/probe_ab.py, docs/probe-engine.md):
/// a lane costs a worker pair's driver start-up (lavapipe +0.15 s, NVIDIA H200 +0.3 s
/// of wall time, the H200's serialised across processes) while a route on warm
/// workers takes 3-40 ms, so a second lane has made every default run slower.
unsigned default_jobs();

/// The most lanes an explicit --jobs is given: the CPUs this process may run on
/// (sched_getaffinity), and one per 512 MiB of MemAvailable (/proc/meminfo), since a
/// lane is two workers of 65-200 MiB RSS each with a driver loaded. At least 1.
unsigned jobs_limit();

/// Called once per row, in plan order, as soon as that row and every row before it are done.
using RowSink = std::function<void(const RowResult&)>;

/// Runs the planned rows. Construct it as early as the options are known: with
/// warm workers it starts them at once, so their driver start-up overlaps the
/// rest of phase A.
class Engine {
 public:
  /// `may_run`: the rows that may be run (decided rows may be left out), for how
  /// many lanes to start and which drivers their workers open up front.
  Engine(const EngineOptions& options, const std::vector<PlannedRow>& may_run);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs every planned row that is not `decided` and returns one RowResult per
  /// planned row, in plan order; `sink` sees each in plan order as soon as it and
  /// every row before it are done. With `measure`, a row that round-tripped is run
  /// a second time at measure_size on the same lane; the verdict stays the first
  /// run's. Up to `jobs` rows run at once; GL rows all go to lane 0 and CUDA rows to
  /// lane 1 (or 0), so only those lanes' workers open those drivers. A row whose route
  /// retires_worker runs after every other row its lane could take, and the workers
  /// that ran its halves are retired after it (Lane::retire).
  /// Errors: a child or worker could not be started (os_error("posix_spawn") …);
  /// rows already handed to `sink` stay handed.
  Result<std::vector<RowResult>> execute(const std::vector<PlannedRow>& plan, const RowSink& sink);

  /// Whether phase_a() has a worker to ask (select_device set and a lane started).
  bool finds_phase_a() const;
  /// Waits at most `timeout_s` for lane 0's first worker to send phase A, then tells
  /// every lane the selected device (when phase A selected one). The value is phase A
  /// as the worker settled it (settle_phase_a(): the run's phase A or the run's error).
  /// Errors: that worker could not be started, died (its exit named), sent no findings
  /// in time, or sent a malformed frame (protocol).
  Result<Result<PhaseA>> phase_a(double timeout_s);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Engine(options, plan).execute(plan, sink).
Result<std::vector<RowResult>> execute_rows(const std::vector<PlannedRow>& plan, const EngineOptions& options,
                                            const RowSink& sink);

}  // namespace extmem::probe
