#include "probe/phase_a_codec.h"

#include <fmt/format.h>

#include "extmem/os/pidfd.h"
#include "probe/error_codec.h"
#include "probe/gl_driver.h"
#include "probe/worker/fd_fetch_failure.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

// --- writing -----------------------------------------------------------------

template <class V>
json by_name(const std::vector<std::pair<std::string, V>>& list) {
  json o = json::object();
  for (const auto& [name, value] : list) o[name] = value;
  return o;
}

// A part that could not be found: the message for people, the error for code.
json failed_part(const Error& e) { return {{"error", e.message()}, {"failure", error_json(e)}}; }

json context_json(const RunContext& c) {
  return {{"uid", c.uid}, {"pid", c.pid}, {"selinux", c.selinux}, {"kernel", c.kernel}, {"hostname", c.hostname},
          {"drm_render_nodes", c.drm_render_nodes}, {"private_runtime_dir", c.private_runtime_dir},
          {"runtime_dir_was", c.runtime_dir_was}};
}

json device_json(const vk::DeviceInfo& d) {
  json heaps = json::array(), types = json::array(), xb = json::array(), xs = json::array(), xi = json::array(),
       mods = json::array();
  for (const auto& h : d.heaps) heaps.push_back({{"size", h.size}, {"flags", h.flags}, {"flag_names", h.flag_names}});
  for (const auto& t : d.types)
    types.push_back({{"index", t.index}, {"heap_index", t.heap_index}, {"flags", t.flags}, {"flag_names", t.flag_names}});
  for (const auto& x : d.external_buffers)
    xb.push_back({{"handle_type", x.handle_type}, {"handle_type_bit", x.handle_type_bit}, {"features", x.features},
                  {"exportable", x.exportable}, {"importable", x.importable}, {"dedicated_only", x.dedicated_only},
                  {"export_from_imported", x.export_from}, {"compatible", x.compatible}});
  for (const auto& x : d.external_semaphores)
    xs.push_back({{"handle_type", x.handle_type}, {"semaphore_type", x.semaphore_type}, {"queried", x.queried},
                  {"features", x.features}, {"exportable", x.exportable}, {"importable", x.importable},
                  {"export_from_imported", x.export_from}, {"compatible", x.compatible}});
  for (const auto& x : d.external_images)
    xi.push_back({{"handle_type", x.handle_type}, {"tiling", x.tiling}, {"result", x.result}, {"result_code", x.result_code},
                  {"features", x.features}, {"exportable", x.exportable}, {"importable", x.importable},
                  {"dedicated_only", x.dedicated_only}, {"export_from_imported", x.export_from},
                  {"compatible", x.compatible}, {"max_width", x.max_width}, {"max_height", x.max_height},
                  {"max_mip_levels", x.max_mip_levels}, {"max_array_layers", x.max_array_layers}});
  for (const auto& m : d.drm_modifiers)
    mods.push_back({{"modifier", m.modifier}, {"plane_count", m.plane_count}, {"tiling_features", m.tiling_features},
                    {"dma_buf_result", m.dma_buf_result}, {"dma_buf_result_code", m.dma_buf_result_code},
                    {"dma_buf_exportable", m.dma_buf_exportable}, {"dma_buf_importable", m.dma_buf_importable}});
  return {{"index", d.index}, {"name", d.name}, {"vendor_id", d.vendor_id}, {"device_id", d.device_id},
          {"device_type", d.device_type}, {"api_version", d.api_version}, {"driver_version", d.driver_version},
          {"driver_name", d.driver_name}, {"driver_info", d.driver_info}, {"device_uuid", d.device_uuid},
          {"driver_uuid", d.driver_uuid}, {"heaps", heaps}, {"memory_types", types}, {"extensions", by_name(d.extensions)},
          {"external_buffers", xb}, {"external_semaphores", xs},
          {"min_imported_host_pointer_alignment", d.min_imported_host_pointer_alignment},
          {"max_image_dimension_2d", d.max_image_dimension_2d}, {"external_images", xi}, {"drm_modifiers", mods}};
}

json vulkan_json(const vk::VulkanEnumeration& e, std::uint32_t selected) {
  json devices = json::array();
  for (const vk::DeviceInfo& d : e.devices) devices.push_back(device_json(d));
  return {{"loader_version", e.loader_version}, {"selected", selected}, {"devices", devices}};
}

json gl_driver_json(const GlDriverChoice& c, const Result<gles::GlesInfo>& gles) {
  return {{"requested", c.requested}, {"served", c.served}, {"why", c.why}, {"env", by_name(c.env)},
          {"gl_renderer", gles ? json(gles->gl_renderer) : json(nullptr)},
          {"renderer_matches", gles ? json(renderer_matches(c, gles->gl_renderer)) : json(nullptr)}};
}

json gles_json(const Result<gles::GlesInfo>& r, const std::string& vk_device_uuid, const std::string& vk_driver_uuid) {
  if (!r) return failed_part(r.error());
  const gles::GlesInfo& g = *r;
  return {{"platform", g.platform}, {"egl_vendor", g.egl_vendor}, {"egl_version", g.egl_version},
          {"gl_vendor", g.gl_vendor}, {"gl_renderer", g.gl_renderer}, {"gl_version", g.gl_version},
          {"extensions", by_name(g.extensions)}, {"device_uuid", g.device_uuid}, {"driver_uuid", g.driver_uuid},
          {"device_uuid_vs_vulkan", gles::compare_uuid(g.device_uuid, vk_device_uuid)},
          {"driver_uuid_vs_vulkan", gles::compare_uuid(g.driver_uuid, vk_driver_uuid)}};
}

json cuda_json(const Result<cuda::Enumeration>& r, const std::string& vk_device_uuid) {
  json j = r ? json::object() : failed_part(r.error());
  j["built"] = cuda::routes_built();
  j["build_note"] = cuda::build_note();
  if (!r) return j;
  json devices = json::array();
  for (const cuda::DeviceInfo& d : r->devices)
    devices.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"uuid", d.uuid}, {"total_mem", d.total_mem},
                       {"posix_fd_handle", d.posix_fd}, {"virtual_memory_management", d.vmm},
                       {"host_register", d.host_register}, {"dma_buf", d.dma_buf}, {"ipc_event", d.ipc_event},
                       {"fabric_handle", d.fabric}, {"gpu_direct_rdma", d.gpu_direct_rdma},
                       {"granularity_minimum", d.granularity_minimum},
                       {"granularity_recommended", d.granularity_recommended},
                       {"matches_vulkan_device", d.uuid == vk_device_uuid}});
  j["library"] = r->library;
  j["driver_version"] = r->driver_version;
  j["devices"] = devices;
  return j;
}

json fd_transport_json(const FdTransportFinding& f) {
  json refused = nullptr;
  if (f.refused) {
    refused = error_json(*f.refused);
    refused["text"] = fd_fetch_failure_text(*f.refused);
  }
  const bool limit = f.attempted && f.refused && fd_fetch_hit_resource_limit(*f.refused);
  return {{"pidfd_getfd", f.permitted ? "permitted" : limit ? "could not try" : f.attempted ? "refused" : "not checked"},
          {"how", f.how},
          {"refused", refused},
          {"ptrace_scope", f.ptrace_scope ? json(*f.ptrace_scope) : json(nullptr)},
          {"ptrace_scope_text", os::describe_ptrace_scope(f.ptrace_scope)}};
}

// --- reading -------------------------------------------------------------------
// Each reader takes what it needs and leaves the rest (derived facts, texts) to
// the re-encoding check in phase_a_from_json. nlohmann's exceptions for a missing
// member or a value of another type are caught there too.

// A member refused while reading: where (a JSON pointer) and what is accepted.
struct Refused {
  std::string where, detail;
};

template <class V>
std::vector<std::pair<std::string, V>> names_from(const json& j) {
  std::vector<std::pair<std::string, V>> out;
  for (const auto& [name, value] : j.items()) out.emplace_back(name, value.template get<V>());
  return out;
}

Error error_at(const json& j, const std::string& where) {
  auto e = error_from_json(j);
  if (!e)
    throw Refused{where, "not accepted: an error is {step, kind, code, detail, space, native}, with a kind and a code "
                         "space this build names"};
  return std::move(*e);
}

template <class T, class Read>
Result<T> part_from(const json& j, const std::string& where, Read read) {
  if (j.contains("failure")) return error_at(j.at("failure"), where + "/failure");
  return read(j);
}

RunContext run_context_from(const json& j) {
  RunContext c;
  c.uid = j.at("uid").get<unsigned>();
  c.pid = j.at("pid").get<int>();
  c.selinux = j.at("selinux").get<std::string>();
  c.kernel = j.at("kernel").get<std::string>();
  c.hostname = j.at("hostname").get<std::string>();
  c.drm_render_nodes = j.at("drm_render_nodes").get<std::vector<std::string>>();
  c.private_runtime_dir = j.at("private_runtime_dir").get<std::string>();
  c.runtime_dir_was = j.at("runtime_dir_was").get<std::string>();
  return c;
}

vk::DeviceInfo device_from(const json& j) {
  vk::DeviceInfo d;
  j.at("index").get_to(d.index);
  j.at("name").get_to(d.name);
  j.at("vendor_id").get_to(d.vendor_id);
  j.at("device_id").get_to(d.device_id);
  j.at("device_type").get_to(d.device_type);
  j.at("api_version").get_to(d.api_version);
  j.at("driver_version").get_to(d.driver_version);
  j.at("driver_name").get_to(d.driver_name);
  j.at("driver_info").get_to(d.driver_info);
  j.at("device_uuid").get_to(d.device_uuid);
  j.at("driver_uuid").get_to(d.driver_uuid);
  for (const json& h : j.at("heaps"))
    d.heaps.push_back({h.at("size").get<std::uint64_t>(), h.at("flags").get<std::uint32_t>(), h.at("flag_names").get<std::string>()});
  for (const json& t : j.at("memory_types"))
    d.types.push_back({t.at("index").get<std::uint32_t>(), t.at("heap_index").get<std::uint32_t>(),
                       t.at("flags").get<std::uint32_t>(), t.at("flag_names").get<std::string>()});
  d.extensions = names_from<bool>(j.at("extensions"));
  for (const json& x : j.at("external_buffers")) {
    vk::ExternalBufferInfo b;
    x.at("handle_type").get_to(b.handle_type);
    x.at("handle_type_bit").get_to(b.handle_type_bit);
    x.at("features").get_to(b.features);
    x.at("exportable").get_to(b.exportable);
    x.at("importable").get_to(b.importable);
    x.at("dedicated_only").get_to(b.dedicated_only);
    x.at("export_from_imported").get_to(b.export_from);
    x.at("compatible").get_to(b.compatible);
    d.external_buffers.push_back(std::move(b));
  }
  for (const json& x : j.at("external_semaphores")) {
    vk::ExternalSemaphoreInfo s;
    x.at("handle_type").get_to(s.handle_type);
    x.at("semaphore_type").get_to(s.semaphore_type);
    x.at("queried").get_to(s.queried);
    x.at("features").get_to(s.features);
    x.at("exportable").get_to(s.exportable);
    x.at("importable").get_to(s.importable);
    x.at("export_from_imported").get_to(s.export_from);
    x.at("compatible").get_to(s.compatible);
    d.external_semaphores.push_back(std::move(s));
  }
  j.at("min_imported_host_pointer_alignment").get_to(d.min_imported_host_pointer_alignment);
  j.at("max_image_dimension_2d").get_to(d.max_image_dimension_2d);
  for (const json& x : j.at("external_images")) {
    vk::ExternalImageInfo i;
    x.at("handle_type").get_to(i.handle_type);
    x.at("tiling").get_to(i.tiling);
    x.at("result").get_to(i.result);
    x.at("result_code").get_to(i.result_code);
    x.at("features").get_to(i.features);
    x.at("exportable").get_to(i.exportable);
    x.at("importable").get_to(i.importable);
    x.at("dedicated_only").get_to(i.dedicated_only);
    x.at("export_from_imported").get_to(i.export_from);
    x.at("compatible").get_to(i.compatible);
    x.at("max_width").get_to(i.max_width);
    x.at("max_height").get_to(i.max_height);
    x.at("max_mip_levels").get_to(i.max_mip_levels);
    x.at("max_array_layers").get_to(i.max_array_layers);
    d.external_images.push_back(std::move(i));
  }
  for (const json& x : j.at("drm_modifiers")) {
    vk::DrmModifierInfo m;
    x.at("modifier").get_to(m.modifier);
    x.at("plane_count").get_to(m.plane_count);
    x.at("tiling_features").get_to(m.tiling_features);
    x.at("dma_buf_result").get_to(m.dma_buf_result);
    x.at("dma_buf_result_code").get_to(m.dma_buf_result_code);
    x.at("dma_buf_exportable").get_to(m.dma_buf_exportable);
    x.at("dma_buf_importable").get_to(m.dma_buf_importable);
    d.drm_modifiers.push_back(std::move(m));
  }
  return d;
}

GlDriverChoice gl_driver_from(const json& j) {
  GlDriverChoice c;
  j.at("requested").get_to(c.requested);
  j.at("served").get_to(c.served);
  j.at("why").get_to(c.why);
  c.env = names_from<std::string>(j.at("env"));
  if (!gl_driver_name_ok(c.requested)) throw Refused{"/gl_driver/requested", std::string("not accepted: ") + kGlDriverAccepts};
  if (c.served == "auto" || !gl_driver_name_ok(c.served))
    throw Refused{"/gl_driver/served", "not accepted: system, zink or llvmpipe"};
  return c;
}

gles::GlesInfo gles_from(const json& j) {
  gles::GlesInfo g;
  j.at("platform").get_to(g.platform);
  j.at("egl_vendor").get_to(g.egl_vendor);
  j.at("egl_version").get_to(g.egl_version);
  j.at("gl_vendor").get_to(g.gl_vendor);
  j.at("gl_renderer").get_to(g.gl_renderer);
  j.at("gl_version").get_to(g.gl_version);
  g.extensions = names_from<bool>(j.at("extensions"));
  j.at("device_uuid").get_to(g.device_uuid);
  j.at("driver_uuid").get_to(g.driver_uuid);
  return g;
}

cuda::Enumeration cuda_from(const json& j) {
  cuda::Enumeration e;
  j.at("library").get_to(e.library);
  j.at("driver_version").get_to(e.driver_version);
  for (const json& x : j.at("devices")) {
    cuda::DeviceInfo d;
    x.at("ordinal").get_to(d.ordinal);
    x.at("name").get_to(d.name);
    x.at("uuid").get_to(d.uuid);
    x.at("total_mem").get_to(d.total_mem);
    x.at("posix_fd_handle").get_to(d.posix_fd);
    x.at("virtual_memory_management").get_to(d.vmm);
    x.at("host_register").get_to(d.host_register);
    x.at("dma_buf").get_to(d.dma_buf);
    x.at("ipc_event").get_to(d.ipc_event);
    x.at("fabric_handle").get_to(d.fabric);
    x.at("gpu_direct_rdma").get_to(d.gpu_direct_rdma);
    x.at("granularity_minimum").get_to(d.granularity_minimum);
    x.at("granularity_recommended").get_to(d.granularity_recommended);
    e.devices.push_back(std::move(d));
  }
  return e;
}

FdTransportFinding fd_transport_from(const json& j) {
  FdTransportFinding f;
  const std::string said = j.at("pidfd_getfd").get<std::string>();
  f.permitted = said == "permitted";
  f.attempted = said != "not checked";
  j.at("how").get_to(f.how);
  if (const json& r = j.at("refused"); !r.is_null()) {
    json parts = r;
    parts.erase("text");
    f.refused = error_at(parts, "/fd_transport/refused");
  }
  if (const json& s = j.at("ptrace_scope"); !s.is_null()) f.ptrace_scope = s.get<int>();
  return f;
}

PhaseA read_phase_a(const json& m) {
  if (!m.is_object()) throw Refused{"", "not a JSON object"};
  PhaseA a;
  a.context = run_context_from(m.at("context"));
  const json& vulkan = m.at("vulkan");
  vulkan.at("loader_version").get_to(a.vulkan.loader_version);
  for (const json& d : vulkan.at("devices")) a.vulkan.devices.push_back(device_from(d));
  const json& selected = vulkan.at("selected");
  if (!selected.is_number_unsigned() || selected.get<std::uint64_t>() >= a.vulkan.devices.size())
    throw Refused{"/vulkan/selected", fmt::format("{} is not accepted: the index of one of the enumeration's {} devices",
                                                  selected.dump(), a.vulkan.devices.size())};
  a.selected = selected.get<std::uint32_t>();
  a.gl_driver = gl_driver_from(m.at("gl_driver"));
  a.gles = part_from<gles::GlesInfo>(m.at("gles"), "/gles", gles_from);
  a.cuda = part_from<cuda::Enumeration>(m.at("cuda"), "/cuda", cuda_from);
  a.fd_transport = fd_transport_from(m.at("fd_transport"));
  return a;
}

Error refusal(std::string_view what, const std::string& where, std::string detail) {
  return Error{where.empty() ? std::string(what) : fmt::format("{} {}", what, where), ErrorKind::protocol, {},
               std::move(detail)};
}

}  // namespace

nlohmann::json phase_a_json(const PhaseA& a) {
  static const vk::DeviceInfo kNone;  // a selected index out of range compares the UUIDs with ""
  const vk::DeviceInfo& dev = a.selected < a.vulkan.devices.size() ? a.vulkan.devices[a.selected] : kNone;
  return {{"context", context_json(a.context)},
          {"vulkan", vulkan_json(a.vulkan, a.selected)},
          {"gl_driver", gl_driver_json(a.gl_driver, a.gles)},
          {"gles", gles_json(a.gles, dev.device_uuid, dev.driver_uuid)},
          {"cuda", cuda_json(a.cuda, dev.device_uuid)},
          {"fd_transport", fd_transport_json(a.fd_transport)}};
}

Result<PhaseA> phase_a_from_json(const nlohmann::json& members, std::string_view what) {
  PhaseA a;
  try {
    a = read_phase_a(members);
  } catch (const Refused& r) {
    return refusal(what, r.where, r.detail);
  } catch (const json::exception& e) {
    return refusal(what, {}, e.what());
  }
  // Exactly what phase_a_json writes for the decoded value: this refuses unknown
  // members, numbers out of their field's range (a wrapped -1, a truncated 1.5),
  // derived facts that do not follow from the rest, and names the first such member.
  const json again = phase_a_json(a);
  if (again != members) {
    const json patch = json::diff(again, members);
    return refusal(what, patch.empty() ? std::string() : patch[0].value("path", std::string()),
                   "not accepted: an unknown member, a value outside its field's type or range, or a fact that does "
                   "not follow from the others");
  }
  return a;
}

}  // namespace extmem::probe
