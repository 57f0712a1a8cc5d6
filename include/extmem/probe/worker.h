// The worker executable's entry points: what `extmem probe --worker`, `--child`
// and `--fd-transport-check` run. find() (extmem/probe/findings.h) starts its
// route halves as processes of a worker executable (ProbeOptions::worker); the
// extmem command is one, and any program whose main dispatches these options to
// these functions as src/cli/probe_command.cpp does could be another. Each
// function runs in a process find() started, on the sockets it passed (fds 3
// and 4); called any other way they refuse with kExitUsage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "extmem/probe/probe.h"

namespace extmem::probe {

/// What `extmem probe --worker` is started with (the parent's worker pool writes
/// the command line; the CLI reads it back into this).
struct WorkerArgs {
  std::uint32_t device_index = 0; ///< the Vulkan device the run selected, unless `select` is set
  /// Set: pick the device with vk::select_device(devices, *select) (--device's text; "" = default).
  std::optional<std::string> select;
  bool phase_a = false;           ///< enumerate Vulkan (and what follows) and send a `findings` frame first
  bool phase_a_gl = false;        ///< phase A includes EGL/GLES (a selected row uses GL)
  bool phase_a_cuda = false;      ///< phase A includes CUDA (a selected row uses CUDA)
  bool warm_gl = false;           ///< create the EGL context before the first job
  bool warm_cuda = false;         ///< load CUDA and retain the primary context before the first job
  std::string gl_driver{to_string(kDefaultGlDriver)};  ///< --gl-driver as the user gave it: auto, system, zink or llvmpipe
};

/// Runs the worker: fd 3 is its control socket (SOCK_SEQPACKET) to the parent.
/// With `phase_a`, first sends phase A as a `findings` frame, enumerated on the
/// drivers it keeps; EGL and CUDA only with `phase_a_gl` and `phase_a_cuda`
/// (otherwise their findings are the error "not started (no selected row uses
/// ...)"). Opens the drivers once (the Vulkan device always; EGL and CUDA when
/// asked), then for each `job` frame (a route half's parameters, the encoding a
/// fresh child gets too; this worker's own device index and GL driver replace
/// the job's) runs that route half with the job's peer socket and a dup of the
/// control socket as its report channel, then sends a `done` frame (the exit
/// code and what the half left behind) once the half's sockets are closed. A
/// route half that calls exit() or dies takes the worker with it; the parent
/// sees the control socket close and replaces it. Returns 0 when the parent
/// closes the control socket, 2 (kExitUsage) for bad arguments or a malformed job.
int run_worker(const WorkerArgs& args);

/// Child mode (`extmem probe --child=ROW --role=ROLE`, --isolate=route): runs one
/// route half in a fresh process. fd 3 is the peer socket, fd 4 the report socket
/// to the parent, on which the parent's first frame is the half's `job`, the same
/// one a warm worker gets. `row` and `role` are the command line's labels and must
/// name the job's row and role. Returns the half's exit code; kExitUsage (2) when
/// an fd is not a socket, no job comes within 30 s, the job is malformed or the
/// labels disagree with it (the reason on stderr).
int run_fresh_child(std::string_view row, std::string_view role);

/// `extmem probe --fd-transport-check`, the child half of phase A's fd-transport
/// check: expects a socket on fd 3 whose other end offers one fd by pidfd;
/// receives it (fetching it with pidfd_getfd), answers "same <st_dev> <st_ino> uid
/// <uid> pid <pid>" with the fetched fd's identity, or "refused uid <uid> pid
/// <pid>" when the fetch failed (the other end has the errno from the ack), and
/// closes the fetched fd. Waits at most 5 s for the offer. Returns the exit code:
/// 0 when it answered, 1 when the socket failed, 2 (kExitUsage) when fd 3 is not a socket.
int run_fd_transport_check();

}  // namespace extmem::probe
