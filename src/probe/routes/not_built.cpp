// Rows whose halves are not in this build: printed as SKIP with the reason.
#include "probe/routes.h"

namespace extmem::probe {

const RouteDef kT1GlesSameProc{"T1-gles-memobj-fd-same-proc", "gles",
                               "GLES import legs are not built yet (issue 3)", nullptr, nullptr};
const RouteDef kT1GlesCrossProc{"T1-gles-memobj-fd-cross-proc", "gles",
                                "GLES import legs are not built yet (issue 3)", nullptr, nullptr};
const RouteDef kT0AhbBlobTransfer{"T0-ahb-blob-transfer", "t0",
                                  "Android-only route (AHardwareBuffer); this is a Linux build", nullptr, nullptr};
const RouteDef kT0SustainedLock{"T0S-sustained-lock", "t0",
                                "Android-only route (AHardwareBuffer); this is a Linux build", nullptr, nullptr};

}  // namespace extmem::probe
