// Warm workers: processes that start the drivers once and run one route half
// after another (worker/worker_main.h). A lane is one server worker and one
// client worker; lanes run routes side by side (--jobs).
#pragma once

#include <optional>
#include <string>

#include "extmem/core/error.h"
#include "extmem/os/child.h"
#include "extmem/os/ipc.h"
#include "probe/worker/child_context.h"

namespace extmem::probe {

/// One warm worker process and the parent's end of its control socket.
struct WorkerProcess {
  Role role = Role::server;
  os::ChildProcess child;
  os::Channel control;
};

/// What the workers of a lane open before their first job.
struct WorkerWarmth {
  bool gl = false;
  bool cuda = false;
};

class Lane {
 public:
  Lane(std::string exe, unsigned device_index, WorkerWarmth warmth)
      : exe_(std::move(exe)), device_index_(device_index), warmth_(warmth) {}

  /// The lane's worker for `role`, started now when it has none.
  /// Errors: os_error("socketpair"), os_error("posix_spawn").
  Result<WorkerProcess*> worker(Role role);
  /// Forgets the worker for `role`, killing and reaping it if it still runs.
  void drop(Role role);
  /// Starts both workers ahead of the first job (their warm-up overlaps phase A).
  Status start(bool with_client);
  /// Closes the control sockets: idle workers see EOF and exit.
  void close();
  /// close(), then reaps each worker, killing one that has not exited within 2 s.
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

 private:
  std::string exe_;
  unsigned device_index_;
  WorkerWarmth warmth_;
  std::optional<WorkerProcess> server_, client_;
};

}  // namespace extmem::probe
