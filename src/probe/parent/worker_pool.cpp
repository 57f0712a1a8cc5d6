#include "probe/parent/worker_pool.h"

#include <fmt/format.h>

#include "extmem/os/clock.h"
#include "extmem/probe/trace.h"
#include "probe/phase_a_wire.h"

namespace extmem::probe {

Result<WorkerProcess*> Lane::worker(Slot which) {
  std::optional<WorkerProcess>& slot = workers_[static_cast<int>(which)];
  if (slot) return &*slot;
  auto sockets = os::Channel::pair();
  if (!sockets) return std::move(sockets).error();
  std::vector<std::string> argv = {exe_, "probe", "--worker"};
  for (const std::string& a : device_args_)
    if (a.rfind("--phase-a", 0) != 0 || which == Slot::a) argv.push_back(a);
  if (warmth_.gl && which == Slot::a) argv.emplace_back("--warm=gl");
  if (warmth_.cuda) argv.emplace_back("--warm=cuda");
  argv.push_back("--gl-driver=" + warmth_.gl_driver);
  auto child = os::ChildProcess::spawn(exe_, argv, {sockets->second.fd()});
  if (!child) return std::move(child).error();
  tracing::event(fmt::format("spawned worker {} pid {}", which == Slot::a ? "A" : "B", child->pid()));
  slot.emplace(WorkerProcess{std::move(*child), std::move(sockets->first)});
  return &*slot;  // sockets->second (the worker's end) closes here
}

void Lane::set_device_index(unsigned index) { device_args_ = {fmt::format("--device-index={}", index)}; }

void Lane::drop(Slot which) {
  std::optional<WorkerProcess>& slot = workers_[static_cast<int>(which)];
  if (slot && slot->child.pid() > 0) slot->child.kill_and_reap();
  slot.reset();
}

void Lane::close() {
  for (std::optional<WorkerProcess>& slot : workers_)
    if (slot) slot->control.owned_fd().reset();
}

void Lane::retire(Slot which) {
  std::optional<WorkerProcess>& slot = workers_[static_cast<int>(which)];
  if (!slot) return;
  slot->control.owned_fd().reset();
  retired_.push_back(std::move(*slot));
  slot.reset();
}

namespace {

void reap(WorkerProcess& w) {
  const int pid = w.child.pid();  // the reap forgets it
  if (pid <= 0) return;
  if (!w.child.wait(2000)) w.child.kill_and_reap();
  tracing::event(fmt::format("reaped worker {}", pid));
}

}  // namespace

Lane::~Lane() {
  close();
  for (std::optional<WorkerProcess>& slot : workers_)
    if (slot) reap(*slot);
  for (WorkerProcess& w : retired_) reap(w);
}

Status Lane::start(bool both) {
  if (auto s = worker(Slot::a); !s) return std::move(s).error();
  if (both) {
    if (auto c = worker(Slot::b); !c) return std::move(c).error();
  }
  return {};
}

Result<Result<PhaseA>> receive_phase_a(Lane& lane, double timeout_s) {
  WorkerProcess* w = lane.existing(Slot::a);
  if (w == nullptr) return Error{"phase A", ErrorKind::invalid_argument, {}, "no worker started to enumerate"};
  const double deadline = os::monotonic_seconds() + timeout_s;
  for (;;) {
    const double left = deadline - os::monotonic_seconds();
    if (left <= 0)
      return Error{"phase A", ErrorKind::timeout, {}, fmt::format("no findings from the worker within {:g} s", timeout_s)};
    auto frame = w->control.recv(static_cast<int>(left * 1000) + 1);
    if (!frame) {
      if (frame.error().kind == ErrorKind::timeout) continue;
      if (frame.error().kind == ErrorKind::peer_closed) {
        auto info = w->child.wait(2000);
        const std::string how = info ? info->describe() : "no exit seen";
        lane.drop(Slot::a);
        return Error{"phase A in the worker", ErrorKind::driver, how, "the worker ended before it sent phase A"};
      }
      return std::move(frame).error();
    }
    if (frame->type == os::MsgType::step) continue;
    if (frame->type != os::MsgType::findings)
      return Error{"phase A", ErrorKind::protocol, {}, fmt::format("unexpected message type {}", static_cast<int>(frame->type))};
    return decode_phase_a(frame->payload);
  }
}

}  // namespace extmem::probe
