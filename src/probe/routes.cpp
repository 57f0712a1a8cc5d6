#include "probe/routes.h"

#include <array>
#include <functional>

namespace extmem::probe {

std::span<const RouteDef> route_table() {
  static const std::array<std::reference_wrapper<const RouteDef>, 13> refs = {
      kT0AhbBlobTransfer, kT0SustainedLock, kT1OpaqueFd, kT1DmaBuf, kT1GlesSameProc, kT1GlesCrossProc,
      kT3MemfdCrossProcess, kT3ExternalMemoryHost, kT3ClientMemfdServerImport, kT3MemfdSealed,
      kT1OpaqueFdCuda, kT1CudaVmmFd, kT3CudaHostRegister,
  };
  static const std::vector<RouteDef> table(refs.begin(), refs.end());
  return table;
}

const RouteDef* find_route(std::string_view row) {
  for (const RouteDef& r : route_table())
    if (r.row == row) return &r;
  return nullptr;
}

}  // namespace extmem::probe
