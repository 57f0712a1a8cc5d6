// What `extmem probe` finds, apart from how it is printed: phase A (the run
// context and the Vulkan, EGL/GLES and CUDA enumerations) and one RowResult per
// row with its legs, verdict, details and timing. extmem::probe::find() returns
// it; the text, JSON and JUnit writers (extmem/probe/write.h) consume it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/core/verdict.h"
#include "extmem/cuda/enumerate.h"
#include "extmem/gles/enumerate.h"
#include "extmem/probe/boundary.h"
#include "extmem/probe/hygiene.h"
#include "extmem/probe/measure_figures.h"
#include "extmem/vulkan/enumerate.h"

namespace extmem::probe {

struct ProbeOptions;

/// Who and where the probe ran.
struct RunContext {
  unsigned uid = 0;
  int pid = 0;
  std::string selinux;  ///< /proc/self/attr/current, or "none"
  std::string kernel;   ///< uname release
  std::string hostname; ///< uname nodename: the node a fleet report labels the run with
  /// DRM render nodes present (/dev/dri/renderD*, sorted paths); empty when none. The
  /// dma-buf image routes of a real display stack (GBM, scanout) need one.
  std::vector<std::string> drm_render_nodes;
  /// Set when XDG_RUNTIME_DIR was unset or not an absolute path to a directory: the
  /// private directory (mode 0700, removed when find() returns) that the probe's own
  /// processes were given instead, so the drivers' libwayland-client does not complain.
  std::string private_runtime_dir;
  /// What XDG_RUNTIME_DIR was then: "unset", or the rejected value.
  std::string runtime_dir_was;
};

/// Which GL implementation the GLES rows run on, and why (--gl-driver; docs/probe.md,
/// "Which GL serves"). Decided in each process that does GL before libEGL is loaded.
struct GlDriverChoice {
  std::string requested = "auto";  ///< --gl-driver as given: auto, system, zink or llvmpipe
  std::string served = "system";   ///< system (the environment as the probe found it), zink or llvmpipe
  std::string why;                 ///< the rule that picked `served`, naming what it looked at
  /// Variables the probe set in the process environment, sorted by name; empty when it set none.
  std::vector<std::pair<std::string, std::string>> env;
  /// "NAME=value NAME=value", or "none".
  std::string env_text() const;
};

/// Whether pidfd_getfd is permitted between two processes of the probe (docs/probe.md,
/// "How fds cross"): a child the probe starts the way it starts its workers (the same
/// binary, the same credentials) fetches an fd of the probe's own process. Neither
/// is the other's ancestor in the direction of the fetch, as with two workers, so
/// Yama's ptrace_scope 1 refuses it as it refuses the workers. The probe relaxes
/// nothing: no PR_SET_PTRACER, no capability.
struct FdTransportFinding {
  bool attempted = false;     ///< the child was started and the offer sent
  bool permitted = false;     ///< the child fetched the fd and saw the same file (st_dev, st_ino)
  std::string how;            ///< what was tried, with both pids and uids ("a child of the probe (pid=12, uid=0) fetching a memfd of ...")
  /// The fetch's own failure (step "pidfd_open(pid P)" / "pidfd_getfd(pid P, fd N)", errno
  /// verbatim); or, when the check itself could not run, what stopped it (spawn, socket, timeout).
  std::optional<Error> refused;
  std::optional<int> ptrace_scope;  ///< /proc/sys/kernel/yama/ptrace_scope; nullopt: no Yama
};

/// Phase A: everything enumerated before any route runs.
struct PhaseA {
  RunContext context;
  vk::VulkanEnumeration vulkan;
  std::uint32_t selected = 0;  ///< index into vulkan.devices of the device the routes use
  /// The headless EGL/GLES context's description, or why there is none.
  Result<gles::GlesInfo> gles = Error{"EGL/GLES", ErrorKind::unsupported, {}, "not enumerated"};
  /// The GL driver put in place before the EGL context of phase A was made.
  GlDriverChoice gl_driver;
  /// The CUDA driver's devices, or why there are none (not built, no driver, missing symbol).
  Result<cuda::Enumeration> cuda = Error{"CUDA", ErrorKind::unsupported, {}, "not enumerated"};
  /// Whether pidfd_getfd is permitted here (--fd-transport); checked on every run.
  FdTransportFinding fd_transport;
  /// --peer: the serving side, its context and the boundary between the two sides
  /// (not part of phase A's own JSON form: the document's "peer" member).
  std::optional<PeerFinding> peer;

  const vk::DeviceInfo& device() const { return vulkan.devices.at(selected); }
};

/// One row of the run.
struct RowResult {
  std::string row;                        ///< printed name ("T1-opaque-fd", "T1-opaque-fd@mt2")
  Verdict verdict;
  std::vector<Leg> legs;                  ///< as the route reported them; empty when decided in phase A
  std::vector<std::string> detail;        ///< the route's facts, in report order
  std::string server_step, client_step;   ///< last step each half reported
  double seconds = 0;                     ///< wall time of the route, seconds; 0 when decided in phase A
  std::optional<SoakCount> soak;          ///< --soak counts, when the route soaked
  std::vector<SyncHold> sync_holds;       ///< S1 rows: each ordering proof's calibrated hold
  /// --measure: the measuring run's figures of the legs that round-tripped in
  /// this (the verdict) run, or why there are none; absent when not measured.
  std::optional<RowMeasure> measure;
  /// Warm workers only: what each half left in its worker (the per-route hygiene
  /// check); absent with --isolate=route and for rows decided in phase A.
  std::optional<WorkerHygiene> worker_hygiene;
};

/// The whole run.
struct Findings {
  PhaseA phase_a;
  std::vector<RowResult> rows;  ///< in print order (the route table's, twins after their row)
  double seconds = 0;           ///< wall time of find(), seconds

  /// kExitFailed when a row is FAIL or PARTIAL, else kExitOk.
  int exit_code() const;
};

/// Called as the run goes: phase A once it is known (before any route starts),
/// then each row in print order as soon as it and every row before it are done.
struct FindCallbacks {
  std::function<void(const PhaseA&)> phase_a;
  std::function<void(const RowResult&)> row;
};

/// The worker executable find() would start its route halves from (a path, as
/// looked at; the caller owns the string). find() never starts the program that
/// calls it unless that program is named here. Looked for in this order, the
/// first executable regular file taken:
///  1. options.worker when not empty, and then only it;
///  2. the extmem executable installed beside the library: when the library is a
///     shared object, <its directory>/../bin/extmem (the install layout); then
///     <bindir>/extmem where this build installs (`cmake --install`, its
///     CMAKE_INSTALL_PREFIX) and /usr/bin/extmem (the .deb). A static library
///     cannot know where it was installed: a program built against an install
///     elsewhere names it (the CMake package's target extmem::extmem_cli,
///     `$<TARGET_FILE:extmem::extmem_cli>`; docs/library.md).
/// Starts nothing. Error: kind os, step "find the worker executable", code and
/// native the errno of the last place looked at (ENOENT: no file there; EACCES:
/// not a regular file or not executable), detail every place looked at and what
/// was wrong there.
Result<std::string> find_worker(const ProbeOptions& options);

/// Runs phase A and then every row (route halves in processes of the worker
/// executable, find_worker(); a crash, hang or malformed message is that row's
/// FAIL), printing nothing. With options.list_devices it stops after the Vulkan
/// enumeration (rows empty, gles and cuda "not enumerated"), in this process,
/// and needs no worker executable. Errors, nothing else run after them:
/// invalid_argument (exit 2: validate()'s, --device naming no device, --size or
/// --measure-size not fitting the heap, --memory-type not a HOST_VISIBLE type),
/// step = the option or empty, detail = what was wrong and what is accepted;
/// any other kind (exit 3): find_worker()'s error (kind os, step "find the worker
/// executable") before anything starts, no Vulkan loader or device (step "cannot
/// run"), a child could not be started (step "cannot start the route children";
/// rows before it were already handed to callbacks.row). Never throws.
Result<Findings> find(const ProbeOptions& options, const FindCallbacks& callbacks = {});

/// The process exit code for a find() error: kExitUsage for invalid_argument, else kExitCannotRun.
int exit_code_for(const Error& error);

}  // namespace extmem::probe
