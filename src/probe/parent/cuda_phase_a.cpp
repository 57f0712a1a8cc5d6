#include "probe/parent/cuda_phase_a.h"

#include <ostream>

#include <fmt/format.h>

#include "cuda/loader.h"
#include "probe/routes.h"

namespace extmem::probe {
namespace {
std::string yes_no(int v) { return v < 0 ? "query-failed" : v != 0 ? "yes" : "no"; }
}  // namespace

void print_cuda(std::ostream& out, const Result<cuda::Enumeration>& r, const std::string& vulkan_uuid) {
  out << "== phase A: CUDA: " << cuda::build_note() << "\n";
  if (!r) {
    if (!cuda::routes_built()) return;
    // The CUDA rows' SKIP reason, word for word, when there is no usable CUDA here.
    const Error& e = r.error();
    out << "  no CUDA information: " << (e.kind == ErrorKind::no_driver ? no_cuda_driver_reason(e) : e.message()) << "\n";
    return;
  }
  out << fmt::format("  driver {} ({}), {} device(s)\n", r->driver_version, r->library, r->devices.size());
  bool matched = false;
  for (const cuda::DeviceInfo& d : r->devices) {
    const bool match = d.uuid == vulkan_uuid;
    matched = matched || match;
    out << fmt::format("cuda device {}: {} uuid={} mem={} MiB{}\n", d.ordinal, d.name, d.uuid.empty() ? "?" : d.uuid,
                       d.total_mem >> 20, match ? "  <- matches the selected Vulkan device" : "");
    out << fmt::format("  posixFdHandle={} virtualMemoryManagement={} hostRegister={} dmaBuf={}\n", yes_no(d.posix_fd),
                       yes_no(d.vmm), yes_no(d.host_register), yes_no(d.dma_buf));
    out << fmt::format("  ipcEvent={} fabricHandle={} gpuDirectRdma={} granularity={}/{} (minimum/recommended bytes)\n",
                       yes_no(d.ipc_event), yes_no(d.fabric), yes_no(d.gpu_direct_rdma), d.granularity_minimum,
                       d.granularity_recommended);
  }
  if (!matched) out << fmt::format("  no CUDA device has the selected Vulkan deviceUUID {}\n", vulkan_uuid);
}

}  // namespace extmem::probe
