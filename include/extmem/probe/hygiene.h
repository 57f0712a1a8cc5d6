// What a route half left behind in its warm worker: the per-route hygiene
// check (docs/probe-engine.md), part of a row's findings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace extmem::probe {

/// What one route half left in its worker: the idle state before the job
/// compared with the state after it.
struct Hygiene {
  std::uint32_t fds = 0;               ///< fds open in the idle worker before the job
  std::vector<std::string> left_open;  ///< "FD -> readlink target" opened and not closed
  std::vector<std::string> closed;     ///< "FD -> readlink target" open before and closed
  /// Live driver objects more (or fewer) after the job, by counter: vk_buffers,
  /// vk_memories, gl_shared_buffers; absent counters did not change.
  std::map<std::string, std::int64_t> live_delta;
  bool overlapped_warm_up = false;     ///< CUDA's warm-up ran meanwhile: a difference may be its own
  std::int64_t pid = 0;                ///< the worker's pid (tells a replaced worker from the one before)

  /// Nothing left open, nothing closed, no live object more or fewer.
  bool clean() const { return left_open.empty() && closed.empty() && live_delta.empty(); }
  bool operator==(const Hygiene&) const = default;
};

/// Each half's hygiene, where the half ran in a warm worker and said how it
/// ended (a half whose worker died sent none).
struct WorkerHygiene {
  std::optional<Hygiene> server, client;
  bool operator==(const WorkerHygiene&) const = default;
};

}  // namespace extmem::probe
