// The CUDA rows (issue #4). Built in every build (the driver API is declared
// in cuda/cuda_api.h); the binary never links libcuda, it dlopen()s it.
#include "cuda/loader.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/cuda/vk_handover.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {

int cuda_opaque_fd_client(ChildContext& ctx);
int cuda_vmm_fd_server(ChildContext& ctx);
int cuda_vmm_fd_client(ChildContext& ctx);
int cuda_host_register_server(ChildContext& ctx);
namespace {
namespace EXTMEM_ROUTE_FILE {
constexpr std::string_view kNotBuilt = {};
constexpr RoleMain kOpaqueFdServer = [](ChildContext& c) { return export_and_serve_with_handover(c, kOpaqueFd); };
constexpr RoleMain kOpaqueFdClient = cuda_opaque_fd_client, kVmmServer = cuda_vmm_fd_server,
                   kVmmClient = cuda_vmm_fd_client, kHostRegisterServer = cuda_host_register_server,
                   kMemfdOwner = memfd_owner_serve;
constexpr std::string_view kFdExtensions[] = {"VK_KHR_external_memory_fd"};
constexpr HandleNeed kOpaqueFdExport[] = {{"OPAQUE_FD", HandleFeature::exportable}};
constexpr LegDef kOpaqueFdCudaLegs[] = {
    {"cudaimport", false,
     "the Vulkan export imported into CUDA, used with no synchronisation between the APIs: the GPU reads and writes "
     "it, seen by the exporter, whole allocation"},
    {"cudasync", true,
     "the same import used as the APIs specify: every handover ordered by the exporter's timeline semaphore imported "
     "into CUDA; the GPU reads and writes it, seen by the exporter, whole allocation"},
    {"cudaoffset", true,
     "a second CUDA view at region D's offset reads and writes the bytes at that offset, not at the base"},
};
constexpr LegDef kVmmLegs[] = {
    {"cudaimport", true, "a cuMemCreate fd imported and mapped by a second CUDA context: GPU copies round-trip"},
    {"vkimport", false, "the same fd imported into Vulkan as OPAQUE_FD shares the bytes"},
};
constexpr LegDef kHostRegisterLegs[] = {
    {"mmap", true, "the client's memfd, received and mapped, shares the client's bytes"},
    {"cudahost", true, "that mapping registered with CUDA: the GPU reads and writes it, seen by the client"},
};

const RouteDef kT1OpaqueFdCuda{
    .row = "T1-opaque-fd-cuda",
    .group = "t1",
    .skip_reason = kNotBuilt,
    .needs = {.extensions = kFdExtensions, .handle_types = kOpaqueFdExport, .cuda = true},
    .legs = kOpaqueFdCudaLegs,
    .server = {"allocates Vulkan memory, exports an opaque fd, serves", kOpaqueFdServer},
    .client = {"imports the fd into CUDA, drives", kOpaqueFdClient},
    .passes_fds = true};
const RouteDef kT1CudaVmmFd{
    .row = "T1-cuda-vmm-fd",
    .group = "t1",
    .skip_reason = kNotBuilt,
    .needs = {.cuda = true},
    .legs = kVmmLegs,
    .server = {"allocates with cuMemCreate, exports a POSIX fd, serves", kVmmServer},
    .client = {"imports the fd into CUDA and Vulkan, drives", kVmmClient},
    .passes_fds = true};
const RouteDef kT3CudaHostRegister{
    .row = "T3-cuda-host-register",
    .group = "t3",
    .skip_reason = kNotBuilt,
    .needs = {.cuda = true},
    .legs = kHostRegisterLegs,
    .server = {"maps the received memfd, registers it with CUDA, drives", kHostRegisterServer},
    .client = {"allocates a memfd, writes A, serves", kMemfdOwner},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1OpaqueFdCuda, 120);
EXTMEM_ROUTE(kT1CudaVmmFd, 130);
EXTMEM_ROUTE(kT3CudaHostRegister, 140);

}  // namespace extmem::probe
