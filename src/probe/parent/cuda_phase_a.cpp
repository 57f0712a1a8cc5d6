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

nlohmann::json to_json(const Result<cuda::Enumeration>& r, const std::string& vulkan_uuid) {
  nlohmann::json j = {{"built", cuda::routes_built()}, {"build_note", cuda::build_note()}};
  if (!r) {
    j["error"] = r.error().message();
    return j;
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const cuda::DeviceInfo& d : r->devices)
    devices.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"uuid", d.uuid}, {"total_mem", d.total_mem},
                       {"posix_fd_handle", d.posix_fd}, {"virtual_memory_management", d.vmm},
                       {"host_register", d.host_register}, {"dma_buf", d.dma_buf},
                       {"ipc_event", d.ipc_event}, {"fabric_handle", d.fabric}, {"gpu_direct_rdma", d.gpu_direct_rdma},
                       {"granularity_minimum", d.granularity_minimum},
                       {"granularity_recommended", d.granularity_recommended},
                       {"matches_vulkan_device", d.uuid == vulkan_uuid}});
  j["library"] = r->library;
  j["driver_version"] = r->driver_version;
  j["devices"] = devices;
  return j;
}

}  // namespace extmem::probe
