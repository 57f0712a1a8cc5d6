// The table of probe routes. Adding a route = one new file under routes/ plus
// one line in routes.cpp; --only, the child dispatcher and the report follow.
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

/// What a route needs before any process is started; phase A decides a row whose needs are not met.
struct Requirements {
  bool gl = false;    ///< an EGL/GLES context (the worker creates one when a selected route needs it)
  bool cuda = false;  ///< the CUDA driver API (libcuda.so.1)
};

struct RouteDef {
  std::string_view row;          ///< the printed row name: a stable interface
  std::string_view group;        ///< "t0", "t1", "t3" or "gles", for --only-GROUP / --no-gles
  std::string_view skip_reason;  ///< non-empty: this build cannot run the route; printed as SKIP
  RouteHalf server;              ///< the "server" process (EXTMEM_TEST_FAULT role "server")
  RouteHalf client;              ///< the "client" process; main null for a single-process route
  Requirements needs;
};

/// Every route, in the order rows are printed.
std::span<const RouteDef> route_table();

/// The route named `row`, or null.
const RouteDef* find_route(std::string_view row);

// One definition per route file.
extern const RouteDef kT1OpaqueFd;
extern const RouteDef kT1DmaBuf;
extern const RouteDef kT1GlesSameProc;
extern const RouteDef kT1GlesCrossProc;
extern const RouteDef kT0AhbBlobTransfer;
extern const RouteDef kT0SustainedLock;
extern const RouteDef kT3MemfdCrossProcess;
extern const RouteDef kT3ExternalMemoryHost;
extern const RouteDef kT3ClientMemfdServerImport;
extern const RouteDef kT3MemfdSealed;
extern const RouteDef kT1OpaqueFdCuda;  // the CUDA rows: routes/cuda_rows.cpp
extern const RouteDef kT1CudaVmmFd;
extern const RouteDef kT3CudaHostRegister;

}  // namespace extmem::probe
