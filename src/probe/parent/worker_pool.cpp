#include "probe/parent/worker_pool.h"

#include <fmt/format.h>

namespace extmem::probe {

Result<WorkerProcess*> Lane::worker(Role role) {
  std::optional<WorkerProcess>& slot = role == Role::server ? server_ : client_;
  if (slot) return &*slot;
  auto sockets = os::Channel::pair();
  if (!sockets) return std::move(sockets).error();
  std::vector<std::string> argv = {exe_, "probe", "--worker", fmt::format("--role={}", to_string(role)),
                                   fmt::format("--device-index={}", device_index_)};
  if (warmth_.gl) argv.emplace_back("--warm=gl");
  if (warmth_.cuda) argv.emplace_back("--warm=cuda");
  auto child = os::ChildProcess::spawn(exe_, argv, {sockets->second.fd()});
  if (!child) return std::move(child).error();
  slot.emplace(WorkerProcess{role, std::move(*child), std::move(sockets->first)});
  return &*slot;  // sockets->second (the worker's end) closes here
}

void Lane::drop(Role role) {
  std::optional<WorkerProcess>& slot = role == Role::server ? server_ : client_;
  if (slot && slot->child.pid() > 0) slot->child.kill_and_reap();
  slot.reset();
}

void Lane::close() {
  for (std::optional<WorkerProcess>* slot : {&server_, &client_})
    if (*slot) (*slot)->control.owned_fd().reset();
}

Lane::~Lane() {
  close();
  for (std::optional<WorkerProcess>* slot : {&server_, &client_}) {
    if (!*slot || (*slot)->child.pid() <= 0) continue;
    if (!(*slot)->child.wait(2000)) (*slot)->child.kill_and_reap();
  }
}

Status Lane::start(bool with_client) {
  if (auto s = worker(Role::server); !s) return std::move(s).error();
  if (with_client) {
    if (auto c = worker(Role::client); !c) return std::move(c).error();
  }
  return {};
}

}  // namespace extmem::probe
