// The CUDA rows (issue #4). Built in every build (the driver API is declared
// in cuda/cuda_api.h); the binary never links libcuda, it dlopen()s it.
#include "cuda/loader.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/vk_export.h"

namespace extmem::probe {

int cuda_opaque_fd_client(ChildContext& ctx);
int cuda_vmm_fd_server(ChildContext& ctx);
int cuda_vmm_fd_client(ChildContext& ctx);
int cuda_host_register_server(ChildContext& ctx);

const RouteDef kT1OpaqueFdCuda{"T1-opaque-fd-cuda", "t1", {},
                               {"allocates Vulkan memory, exports an opaque fd, serves", [](ChildContext& c) { return export_and_serve(c, kOpaqueFd); }},
                               {"imports the fd into CUDA, drives", cuda_opaque_fd_client}, {.cuda = true}};
const RouteDef kT1CudaVmmFd{"T1-cuda-vmm-fd", "t1", {}, {"allocates with cuMemCreate, exports a POSIX fd, serves", cuda_vmm_fd_server}, {"imports the fd into CUDA and Vulkan, drives", cuda_vmm_fd_client}, {.cuda = true}};
const RouteDef kT3CudaHostRegister{"T3-cuda-host-register", "t3", {}, {"maps the received memfd, registers it with CUDA, drives", cuda_host_register_server}, {"allocates a memfd, writes A, serves", memfd_owner_serve}, {.cuda = true}};

}  // namespace extmem::probe
