// Rows whose halves are not in this build (Android only): printed as SKIP with the reason.
#include "probe/routes.h"

namespace extmem::probe {

const RouteDef kT0AhbBlobTransfer{"T0-ahb-blob-transfer", "t0",
                                  "Android-only route (AHardwareBuffer); this is a Linux build", {}, {}, {}};
const RouteDef kT0SustainedLock{"T0S-sustained-lock", "t0",
                                "Android-only route (AHardwareBuffer); this is a Linux build", {}, {}, {}};

}  // namespace extmem::probe
