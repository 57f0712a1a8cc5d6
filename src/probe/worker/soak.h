// --soak: repeat a route's round trip for a while and count stale 32-bit words
// (docs/probe.md, "Coherency over time"; igt prime_mmap_coherency does the same).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "extmem/core/verdict.h"
#include "probe/worker/child_context.h"
#include "probe/layout.h"

namespace extmem::probe {

/// The side of the memory that checks what this side wrote, and writes back.
struct OtherSide {
  /// Stale 32-bit words of `region` against `seed`'s pattern, as that side sees them.
  std::function<Result<std::size_t>(Region, std::uint64_t seed)> count_stale;
  /// That side writes `seed`'s pattern into `region`.
  std::function<Status(Region, std::uint64_t seed)> write;
};

/// The peer process, over the peer socket.
OtherSide peer_side(const ChildContext& ctx);
/// A mapping in this process (same-process routes: the exporter's own Vulkan mapping).
OtherSide local_side(std::span<std::byte> view, const Layout& layout);

/// A GPU round: copy `read` out and count its stale words against `read_seed`;
/// write `write_seed` into `write`.
using GpuRound = std::function<Result<std::size_t>(Region read, std::uint64_t read_seed, Region write,
                                                   std::uint64_t write_seed)>;

struct SoakPlan {
  double seconds = 0;
  std::span<std::byte> local;   ///< this side's CPU mapping of the whole allocation; empty when it has none
  Region local_region = Region::C;  ///< written by this side's CPU, checked by the other side
  Region other_region = Region::B;  ///< written by the other side, checked here (CPU, else GPU copy-out)
  Region gpu_region = Region::E;    ///< written by the GPU, checked by the other side
  const GpuRound* gpu = nullptr;    ///< null: no GPU in this route
};

/// Runs rounds until `plan.seconds` pass: this side writes local_region → the
/// other side counts; the GPU reads it back and writes gpu_region → the other
/// side counts; the other side writes other_region → this side counts. Each
/// round uses fresh seeds. An error ends the soak early; it is returned with
/// the counts so far in `error`.
SoakCount run_soak(ChildContext& ctx, const SoakPlan& plan, const OtherSide& other, std::optional<Error>* error);

}  // namespace extmem::probe
