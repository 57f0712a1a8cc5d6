// Worker mode: a warm process that runs one route half after another
// (`extmem probe --worker`, started by the parent's worker pool).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <map>

#include "probe/done_codec.h"

namespace extmem::probe {

struct WorkerArgs {
  std::uint32_t device_index = 0; ///< the Vulkan device the run selected, unless `select` is set
  /// Set: pick the device with vk::select_device(devices, *select) (--device's text; "" = default).
  std::optional<std::string> select;
  bool phase_a = false;           ///< enumerate Vulkan (and what follows) and send a `findings` frame first
  bool phase_a_gl = false;        ///< phase A includes EGL/GLES (a selected row uses GL)
  bool phase_a_cuda = false;      ///< phase A includes CUDA (a selected row uses CUDA)
  bool warm_gl = false;           ///< create the EGL context before the first job
  bool warm_cuda = false;         ///< load CUDA and retain the primary context before the first job
  std::string gl_driver = "auto"; ///< --gl-driver as the user gave it (gl_driver.h)
};

/// Runs the worker: fd 3 is its control socket (SOCK_SEQPACKET) to the parent.
/// With `phase_a`, first sends phase A (phase_a_wire.h) as a `findings` frame,
/// enumerated on the drivers it keeps; EGL and CUDA only with `phase_a_gl` and
/// `phase_a_cuda` (otherwise their findings are the error "not started (no
/// selected row uses ...)"). Opens the drivers once (the Vulkan device
/// always; EGL and CUDA when asked),
/// then for each `job` frame — the half's HalfParams (probe/job_codec.h, the
/// encoding a fresh child gets too; this worker's own device index and GL driver
/// replace the job's) with the route's peer socket as its fd — runs
/// that route half with the job's peer socket as fd 3 would be in child mode and
/// a dup of the control socket as its report channel, then sends a `done` frame:
/// (done_codec.h: the exit code and what the half left behind) once the half's sockets are
/// closed. A route half that calls exit() or dies takes the worker with it; the
/// parent sees the control socket close and replaces it. Returns 0 when the
/// parent closes the control socket, 2 for bad arguments or a malformed job.
int run_worker(const WorkerArgs& args);

/// What a route left behind in this process, comparing two snapshots: fds
/// opened and not closed (number and readlink target), fds closed that were
/// open before, and the change in live Vulkan buffers/memories and GL shared
/// buffers (done_codec.h, Hygiene; pid and overlapped_warm_up are the caller's).
class HygieneSnapshot {
 public:
  static HygieneSnapshot take();
  Hygiene compare_to(const HygieneSnapshot& later) const;

 private:
  std::map<std::string, std::string> fds_;  // fd number (decimal text) -> target
  std::map<std::string, std::int64_t> live_;  // kHygieneCounters name -> count
};

}  // namespace extmem::probe
