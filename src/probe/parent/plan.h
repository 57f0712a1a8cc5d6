// Turns the route table, the options and phase A's findings into the rows of
// a run (schedule.h's PlannedRow): which rows exist (memory-type twins), and
// which are decided without starting anything.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "extmem/cuda/enumerate.h"
#include "extmem/core/verdict.h"
#include "extmem/os/endpoint.h"
#include "extmem/probe/boundary.h"
#include "extmem/probe/probe.h"
#include "extmem/vulkan/enumerate.h"
#include "probe/parent/schedule.h"
#include "probe/routes.h"

namespace extmem::probe {

/// What phase A found that decides rows: the selected Vulkan device and the CUDA enumeration.
struct PhaseAFacts {
  /// Null before phase A (the engine's early plan): then only not built,
  /// platform and the filters decide rows.
  const vk::DeviceInfo* device = nullptr;
  /// Null while CUDA is still enumerating: rows that need CUDA stay undecided
  /// (beyond not built, platform and filters) until redecide() is given it.
  const Result<cuda::Enumeration>* cuda = nullptr;
};

/// Why `route` is not run in this invocation because of --only, --only-GROUP or
/// --no-GROUP ("not selected by --only", ...), or nullopt when it is selected.
std::optional<std::string> filtered_out(const RouteDef& route, const ProbeOptions& options);

/// The verdict phase A already knows for `route`, or nullopt when only running it
/// tells. In order: not built (SKIP, the route's skip_reason), another platform
/// (SKIP, kAndroidOnlyReason), filtered out (SKIP), no CUDA driver (SKIP,
/// no_cuda_driver_reason), a required device extension absent (UNSUPPORTED
/// "<extension> not exposed by the device"). An extension phase A did not look
/// at decides nothing.
std::optional<Verdict> decided_in_phase_a(const RouteDef& route, const ProbeOptions& options, const PhaseAFacts& found);

/// Decides the rows `planned` left open now that `found` knows more (the CUDA enumeration).
void redecide(std::vector<PlannedRow>& planned, const ProbeOptions& options, const PhaseAFacts& found);

/// One PlannedRow per route in table order, and for a route whose exporter picks
/// its memory, one per entry of `memory_types` (-1: the row itself; i: "<row>@mt<i>").
/// For a route that passes fds (RouteDef::passes_fds), options.fd_transport decides
/// the runs of each of those: "scm" the row alone, "pidfd" only "<row>@pidfd" (its fds
/// cross by pidfd_getfd), "both" the row and then its "@pidfd" twin
/// ("T1-opaque-fd@mt2@pidfd" for a memory-type twin). A twin is decided in phase A
/// exactly as its row is.
std::vector<PlannedRow> plan_rows(const ProbeOptions& options, const std::vector<int>& memory_types,
                                  const PhaseAFacts& found);

/// --peer: decides the open rows whose mechanism the boundary removes. Over an
/// `endpoint` that carries no fds (tcp:), a row whose halves hand each other an fd
/// (RouteDef::passes_fds) is UNSUPPORTED naming the endpoint. An "@pidfd" twin
/// across PID namespaces (`boundary`) is UNSUPPORTED: the pid its peer announces
/// names no process here (or another one), so pidfd_open cannot reach the peer.
void decide_across(std::vector<PlannedRow>& planned, const std::vector<BoundaryFact>& boundary,
                   const os::Endpoint& endpoint);

}  // namespace extmem::probe
