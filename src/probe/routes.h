// The table of probe routes: the single source of truth for what a row is.
// Each route file defines one `extern const RouteDef` (a few for a family sharing
// halves; extern because a namespace-scope const is otherwise file-local) that
// reads as a sentence: row, group, what it needs, the legs it produces, whether
// --memory-type applies, the faults it injects for the tests, and its two
// halves. Each route file registers its definitions (routes/route_file.h) and
// the build lists them in print order. --only and the group flags, phase A's
// decisions, the memory-type twins, the child dispatcher, JSON, JUnit,
// `extmem probe --list-routes`, the README's route table and docs/probe.md's
// fault list come from here; the schema's row list is checked against it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probe/worker/child_context.h"

namespace extmem::probe {

/// One half of a route, run in a child process. Returns the process exit code.
using RoleMain = int (*)(ChildContext&);

/// What one process of a route does, and its entry point.
struct RouteHalf {
  std::string_view does;   ///< one line, for the README's route table ("allocates, exports an fd, serves")
  RoleMain main = nullptr; ///< null: the route has no such half (single-process route) or is not in this build
  bool gl = false;         ///< this half opens GL: a lane runs every such half on the worker that keeps EGL
};

/// Where a route can run at all.
enum class Platform {
  any,      ///< every build
  android,  ///< Android builds only (AHardwareBuffer); a Linux build decides the row SKIP in phase A
};

/// What a handle type must be advertised for (vkGetPhysicalDeviceExternalBufferProperties).
enum class HandleFeature { exportable, importable };

/// A Vulkan external-memory handle type a route uses, and the feature it needs.
/// Informational in phase A: an unadvertised handle type is still tried, because
/// only the driver's decline (with its code) makes the row UNSUPPORTED, and a
/// driver that works without advertising is an OK row (docs: README, "Statuses").
struct HandleNeed {
  std::string_view type;  ///< phase A's name: "OPAQUE_FD", "DMA_BUF", "HOST_ALLOCATION", "AHARDWAREBUFFER"
  HandleFeature feature = HandleFeature::exportable;
};

/// What a route needs before any process is started; phase A decides a row whose needs are not met.
struct Requirements {
  Platform platform = Platform::any;
  /// Vulkan device extensions that must be present; phase A decides the row
  /// UNSUPPORTED "<extension> not exposed by the device" when one is absent.
  std::span<const std::string_view> extensions = {};
  std::span<const HandleNeed> handle_types = {};
  bool gl = false;    ///< an EGL/GLES context (the worker creates one when a selected route needs it)
  bool cuda = false;  ///< the CUDA driver API (libcuda.so.1); phase A decides SKIP "no CUDA driver (...)" without it
};

/// One leg a route reports: a way the other side reaches the memory.
struct LegDef {
  std::string_view name;  ///< trace key ("rawmmap", "vkimport", ...): a stable interface
  bool decisive = true;   ///< [D] counts for the verdict; false: [i], informational only
  std::string_view proves; ///< one line: what a round trip through this leg shows
};

/// A leg of a route's leg table, named by a half: looked up when the half is
/// compiled, so a name the table does not declare does not compile, on the rows
/// CI cannot run (CUDA) too. `Leg vki = report_leg({kImageLegs, "vkimage"});`
struct DeclaredLeg {
  template <std::size_t N>
  consteval DeclaredLeg(const LegDef (&legs)[N], std::string_view name) : def(find(legs, name)) {}
  LegDef def;

 private:
  template <std::size_t N>
  static consteval LegDef find(const LegDef (&legs)[N], std::string_view name) {
    for (const LegDef& leg : legs)
      if (leg.name == name) return leg;
    throw "the route's leg table declares no leg of this name";  // not a constant: the build stops here
  }
};

/// The Leg a half reports for a declared leg: its name and [D]/[i] from the table.
Leg report_leg(DeclaredLeg declared);

/// The same for a half that routes of different leg tables share: the leg
/// `name` of the table of the route `ctx` runs, looked up at run time. A name
/// that table lacks still gives a [D] leg of that name, which the parent
/// refuses (undeclared_leg).
Leg route_leg(const ChildContext& ctx, std::string_view name);

/// A fault a route injects itself when EXTMEM_TEST_FAULT asks for it: a
/// test-only negative control (docs/probe.md, "Test-only fault hooks"). A half
/// acts only on the actions its route's entry declares (ChildContext::test_fault),
/// and `extmem probe --list-routes=faults` prints them.
struct FaultDef {
  std::string_view action;  ///< EXTMEM_TEST_FAULT's ACTION: "closefd", "nowait", ...
  Role role = Role::server; ///< the half that injects it
  std::string_view step;    ///< a STEP-SUBSTRING that reaches it ("post-export fd sanity")
  std::string_view breaks;  ///< what it breaks, and what the row must then say
};

/// Whether --memory-type makes twins of a row.
enum class MemoryTypes {
  route_picks,    ///< the route chooses its memory itself; --memory-type does not apply
  exporter_picks, ///< the exporting side allocates from the --memory-type index: one "@mt<i>" twin per type
};

struct RouteDef {
  std::string_view row;          ///< the printed row name: a stable interface
  std::string_view group;        ///< one of route_groups(): --only-GROUP selects it, --no-GROUP where offered
  std::string_view skip_reason = {};  ///< non-empty: this build cannot run the route (not built); printed as SKIP
  Requirements needs;
  std::span<const LegDef> legs;  ///< every leg the route may report, in report order
  std::span<const FaultDef> faults = {};  ///< the test-only faults its halves inject themselves
  MemoryTypes memory_types = MemoryTypes::route_picks;
  RouteHalf server;              ///< the "server" process (EXTMEM_TEST_FAULT role "server")
  RouteHalf client;              ///< the "client" process; main null for a single-process route
  /// --measure gives the row a second, measuring run when a leg round-tripped; false for a
  /// route whose legs move no bytes (T1-opaque-fd-foreign-fd: its rt is a driver's refusal).
  bool measured = true;
  /// Its halves hand the driver input that may leave the process's driver changed, so a
  /// worker that ran one could answer the next route differently (T1-opaque-fd-foreign-fd:
  /// on NVIDIA 580 a refused foreign-fd import made the next vkAllocateMemory of that
  /// VkDevice fail, measured). On warm workers such a row runs after every other row of
  /// its lane, and each worker that ran one of its halves is retired afterwards: no route
  /// ever runs on it again (docs/probe-engine.md, "What holds in both modes").
  bool retires_worker = false;
  /// Its halves hand an fd to each other over the peer socket (the shared memory, a
  /// semaphore, a sync file). --fd-transport=both gives such a row a twin "<row>@pidfd"
  /// in which every fd crosses by pidfd_getfd instead of SCM_RIGHTS, and
  /// --fd-transport=pidfd runs only that twin (docs/probe.md, "How fds cross"); a row
  /// that passes no fd has nothing to switch and keeps its one run.
  bool passes_fds = false;

  /// The declared leg named `name`, or null.
  const LegDef* leg(std::string_view name) const;
  /// The declared fault of action `action`, or null.
  const FaultDef* fault(std::string_view action) const;
};

/// A group of rows: the --only-GROUP flag and, where `excludable`, --no-GROUP.
struct RouteGroup {
  std::string_view name;         ///< "t0", "t1", "t3", "gles"
  std::string_view rows;         ///< what its rows are, for --help ("the T1 (Vulkan export) rows")
  bool excludable = false;       ///< offers --no-GROUP (today: gles)
};

/// Every route, in the order rows are printed.
std::span<const RouteDef> route_table();

/// Every group, in --help order; each route's group is one of them (a test checks).
std::span<const RouteGroup> route_groups();

/// The route named `row`, or null.
const RouteDef* find_route(std::string_view row);

/// The first leg of `reported` that `route`'s table does not declare with the
/// same [D]/[i], as "leg 'x' is not in the route's table" or "leg 'x' is [i] in
/// the route's table, reported [D]"; empty when all are. A route that reports
/// such a leg has a bug: the parent makes its row FAIL with this text.
std::string undeclared_leg(const RouteDef& route, std::span<const Leg> reported);

/// The reason phase A gives an Android-only route on a Linux build.
inline constexpr std::string_view kAndroidOnlyReason = "Android-only route (AHardwareBuffer); this is a Linux build";

/// The SKIP reason of a CUDA row when cuda::load() found no driver: "no CUDA
/// driver (<step>: <detail>)", the same words whether phase A or a route half saw it.
std::string no_cuda_driver_reason(const Error& load_error);

}  // namespace extmem::probe
