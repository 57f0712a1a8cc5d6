// Warm workers: processes that start the drivers once and run one route half
// after another (worker/worker_main.h). A lane is two workers, slot A and slot
// B; each route's two halves run one on each, the half that opens GL always on
// A (so only A starts EGL), otherwise the server half on A. Lanes run routes side
// by side (--jobs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/os/child.h"
#include "extmem/os/ipc.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "probe/worker/child_context.h"

namespace extmem::probe {

/// One warm worker process and the parent's end of its control socket.
struct WorkerProcess {
  os::ChildProcess child;
  os::Channel control;
  /// Whether it has sent any frame. A worker opens its drivers before it reads its
  /// first job, so until then the time a route waits on it is its start-up.
  bool answered = false;
};

/// What the workers of a lane open before their first job.
struct WorkerWarmth {
  bool gl = false;    ///< slot A starts EGL (it runs every GL half)
  bool cuda = false;  ///< both slots load CUDA (a CUDA route may use it on both sides)
  std::string gl_driver{to_string(kDefaultGlDriver)};  ///< --gl-driver as the user gave it: each worker decides before its EGL starts
};

enum class Slot { a = 0, b = 1 };

class Lane {
 public:
  /// `device_args`: how a new worker learns the device, "--device-index=N", or before
  /// phase A "--worker-select" [+ "--worker-device=SPEC"] (+ "--phase-a": slot A only).
  Lane(std::string exe, std::vector<std::string> device_args, WorkerWarmth warmth)
      : exe_(std::move(exe)), device_args_(std::move(device_args)), warmth_(warmth) {}

  /// Workers started from now on are told this device index.
  void set_device_index(unsigned index);

  /// The lane's worker in `slot`, started now when it has none.
  /// Errors: os_error("socketpair"), os_error("posix_spawn").
  Result<WorkerProcess*> worker(Slot slot);
  /// The worker in `slot` if it has one (none is started).
  WorkerProcess* existing(Slot slot) { return workers_[static_cast<int>(slot)] ? &*workers_[static_cast<int>(slot)] : nullptr; }
  /// Forgets the worker in `slot`, killing and reaping it if it still runs.
  void drop(Slot slot);
  /// Takes the worker in `slot` out of service without killing it: its control socket
  /// closes, so it exits as it would at the end of the run, and the lane's destructor
  /// reaps it. The next worker(slot) starts a new one.
  void retire(Slot slot);
  /// Starts slot A, and B when `both`, ahead of the first job (their warm-up overlaps phase A).
  Status start(bool both);
  /// Closes the control sockets: idle workers see EOF and exit.
  void close();
  /// close(), then reaps each worker (retired ones too), killing one that has not exited within 2 s.
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

 private:
  std::string exe_;
  std::vector<std::string> device_args_;
  WorkerWarmth warmth_;
  std::optional<WorkerProcess> workers_[2];
  std::vector<WorkerProcess> retired_;  ///< exiting, reaped by the destructor
};

/// Waits at most `timeout_s` for the phase A that `lane`'s slot A worker (started
/// with --phase-a) sends, as the worker settled it (settle_phase_a()). Errors: no
/// worker in slot A (invalid_argument); it ended first (driver, its exit named;
/// the slot is dropped); no findings in time (timeout); a frame of another type
/// (protocol); recv's errors.
Result<Result<PhaseA>> receive_phase_a(Lane& lane, double timeout_s);

}  // namespace extmem::probe
