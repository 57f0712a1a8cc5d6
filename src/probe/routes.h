// The table of probe routes. Adding a route = one new file under routes/ plus
// one line in routes.cpp; --only, the child dispatcher and the report follow.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probe/worker/child_context.h"

namespace extmem::probe {

/// One half of a route, run in its own child process. Returns the process exit code.
using RoleMain = int (*)(ChildContext&);

struct RouteDef {
  std::string_view row;          ///< the printed row name: a stable interface
  std::string_view group;        ///< "t0", "t1", "t3" or "gles", for --only-GROUP / --no-gles
  std::string_view skip_reason;  ///< non-empty: this build cannot run the route; printed as SKIP
  RoleMain server = nullptr;     ///< the half that owns the driver-side allocation or import
  RoleMain client = nullptr;     ///< null: a single-process route (only the server half runs)
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
