// The CUDA rows (issue #4). In a build without cuda.h they compile out and
// print SKIP with cuda::kNotBuiltReason; the binary never links libcuda.
#include "cuda/loader.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/vk_export.h"

namespace extmem::probe {

#ifdef EXTMEM_HAVE_CUDA
int cuda_opaque_fd_client(ChildContext& ctx);
int cuda_vmm_fd_server(ChildContext& ctx);
int cuda_vmm_fd_client(ChildContext& ctx);
int cuda_host_register_server(ChildContext& ctx);

const RouteDef kT1OpaqueFdCuda{"T1-opaque-fd-cuda", "t1", {},
                               [](ChildContext& c) { return export_and_serve(c, kOpaqueFd); }, cuda_opaque_fd_client};
const RouteDef kT1CudaVmmFd{"T1-cuda-vmm-fd", "t1", {}, cuda_vmm_fd_server, cuda_vmm_fd_client};
const RouteDef kT3CudaHostRegister{"T3-cuda-host-register", "t3", {}, cuda_host_register_server, memfd_owner_serve};
#else
const RouteDef kT1OpaqueFdCuda{"T1-opaque-fd-cuda", "t1", cuda::kNotBuiltReason, nullptr, nullptr};
const RouteDef kT1CudaVmmFd{"T1-cuda-vmm-fd", "t1", cuda::kNotBuiltReason, nullptr, nullptr};
const RouteDef kT3CudaHostRegister{"T3-cuda-host-register", "t3", cuda::kNotBuiltReason, nullptr, nullptr};
#endif

}  // namespace extmem::probe
