#include "probe/phase_a_codec.h"

#include <concepts>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "extmem/os/pidfd.h"
#include "probe/error_codec.h"
#include "probe/gl_driver.h"
#include "probe/worker/fd_fetch_failure.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

// --- one field list per struct ---------------------------------------------------
// Each struct's JSON keys are written once, in its fields() below, in the order the
// reader takes them (so the first member missing is the one named). The writer
// (PartWriter) and the reader (PartReader) both go through the list; what a part writes besides
// its fields (facts derived from them, this build's CUDA note) is written by its
// part below and checked by phase_a_from_json's re-encoding.

template <class T, class U>
concept Is = std::same_as<std::remove_const_t<T>, U>;

template <class V, Is<RunContext> C>
void fields(V&& v, C& c) {
  v("uid", c.uid);
  v("pid", c.pid);
  v("selinux", c.selinux);
  v("kernel", c.kernel);
  v("hostname", c.hostname);
  v("drm_render_nodes", c.drm_render_nodes);
  v("private_runtime_dir", c.private_runtime_dir);
  v("runtime_dir_was", c.runtime_dir_was);
}

template <class V, Is<vk::MemoryHeapInfo> H>
void fields(V&& v, H& h) {
  v("size", h.size);
  v("flags", h.flags);
  v("flag_names", h.flag_names);
}

template <class V, Is<vk::MemoryTypeInfo> T>
void fields(V&& v, T& t) {
  v("index", t.index);
  v("heap_index", t.heap_index);
  v("flags", t.flags);
  v("flag_names", t.flag_names);
}

template <class V, Is<vk::ExternalBufferInfo> B>
void fields(V&& v, B& b) {
  v("handle_type", b.handle_type);
  v("handle_type_bit", b.handle_type_bit);
  v("features", b.features);
  v("exportable", b.exportable);
  v("importable", b.importable);
  v("dedicated_only", b.dedicated_only);
  v("export_from_imported", b.export_from);
  v("compatible", b.compatible);
}

template <class V, Is<vk::ExternalSemaphoreInfo> S>
void fields(V&& v, S& s) {
  v("handle_type", s.handle_type);
  v("semaphore_type", s.semaphore_type);
  v("queried", s.queried);
  v("features", s.features);
  v("exportable", s.exportable);
  v("importable", s.importable);
  v("export_from_imported", s.export_from);
  v("compatible", s.compatible);
}

template <class V, Is<vk::ExternalImageInfo> I>
void fields(V&& v, I& i) {
  v("handle_type", i.handle_type);
  v("tiling", i.tiling);
  v("result", i.result);
  v("result_code", i.result_code);
  v("features", i.features);
  v("exportable", i.exportable);
  v("importable", i.importable);
  v("dedicated_only", i.dedicated_only);
  v("export_from_imported", i.export_from);
  v("compatible", i.compatible);
  v("max_width", i.max_width);
  v("max_height", i.max_height);
  v("max_mip_levels", i.max_mip_levels);
  v("max_array_layers", i.max_array_layers);
}

template <class V, Is<vk::DrmModifierInfo> M>
void fields(V&& v, M& m) {
  v("modifier", m.modifier);
  v("plane_count", m.plane_count);
  v("tiling_features", m.tiling_features);
  v("dma_buf_result", m.dma_buf_result);
  v("dma_buf_result_code", m.dma_buf_result_code);
  v("dma_buf_exportable", m.dma_buf_exportable);
  v("dma_buf_importable", m.dma_buf_importable);
}

template <class V, Is<vk::DeviceInfo> D>
void fields(V&& v, D& d) {
  v("index", d.index);
  v("name", d.name);
  v("vendor_id", d.vendor_id);
  v("device_id", d.device_id);
  v("device_type", d.device_type);
  v("api_version", d.api_version);
  v("driver_version", d.driver_version);
  v("driver_name", d.driver_name);
  v("driver_info", d.driver_info);
  v("device_uuid", d.device_uuid);
  v("driver_uuid", d.driver_uuid);
  v("heaps", d.heaps);
  v("memory_types", d.types);
  v("extensions", d.extensions);
  v("external_buffers", d.external_buffers);
  v("external_semaphores", d.external_semaphores);
  v("min_imported_host_pointer_alignment", d.min_imported_host_pointer_alignment);
  v("max_image_dimension_2d", d.max_image_dimension_2d);
  v("external_images", d.external_images);
  v("drm_modifiers", d.drm_modifiers);
}

/// "selected" is PhaseA's, written and checked beside these.
template <class V, Is<vk::VulkanEnumeration> E>
void fields(V&& v, E& e) {
  v("loader_version", e.loader_version);
  v("devices", e.devices);
}

/// "gl_renderer" and "renderer_matches" are derived, written by gl_driver_json.
template <class V, Is<GlDriverChoice> C>
void fields(V&& v, C& c) {
  v("requested", c.requested);
  v("served", c.served);
  v("why", c.why);
  v("env", c.env);
}

/// The UUID comparisons with the Vulkan device are derived, written by gles_json.
template <class V, Is<gles::GlesInfo> G>
void fields(V&& v, G& g) {
  v("platform", g.platform);
  v("egl_vendor", g.egl_vendor);
  v("egl_version", g.egl_version);
  v("gl_vendor", g.gl_vendor);
  v("gl_renderer", g.gl_renderer);
  v("gl_version", g.gl_version);
  v("extensions", g.extensions);
  v("device_uuid", g.device_uuid);
  v("driver_uuid", g.driver_uuid);
}

/// "matches_vulkan_device" is derived, written by cuda_json.
template <class V, Is<cuda::DeviceInfo> D>
void fields(V&& v, D& d) {
  v("ordinal", d.ordinal);
  v("name", d.name);
  v("uuid", d.uuid);
  v("total_mem", d.total_mem);
  v("posix_fd_handle", d.posix_fd);
  v("virtual_memory_management", d.vmm);
  v("host_register", d.host_register);
  v("dma_buf", d.dma_buf);
  v("ipc_event", d.ipc_event);
  v("fabric_handle", d.fabric);
  v("gpu_direct_rdma", d.gpu_direct_rdma);
  v("granularity_minimum", d.granularity_minimum);
  v("granularity_recommended", d.granularity_recommended);
}

/// "built" and "build_note" are this build's, written by cuda_json.
template <class V, Is<cuda::Enumeration> E>
void fields(V&& v, E& e) {
  v("library", e.library);
  v("driver_version", e.driver_version);
  v("devices", e.devices);
}

// A visitor that does nothing: what has_fields asks about.
struct Ignore {
  template <class T>
  void operator()(const char*, T&) const {}
};

template <class T>
concept has_fields = requires(T& t) { fields(Ignore{}, t); };

// A list of structs that have a field list: an array of objects.
template <class T>
concept list_of_fields = requires { typename T::value_type; } && has_fields<typename T::value_type>;

// A list of (name, value) pairs, sorted by name: an object keyed by name.
template <class T>
struct is_named_list : std::false_type {};
template <class V>
struct is_named_list<std::vector<std::pair<std::string, V>>> : std::true_type {};

// --- writing -----------------------------------------------------------------

template <class T>
json encode_part(const T& value);

struct PartWriter {
  json& out;
  template <class T>
  void operator()(const char* key, const T& value) const {
    out[key] = encode_part(value);
  }
};

template <class T>
json encode_part(const T& value) {
  if constexpr (has_fields<T>) {
    json o = json::object();
    fields(PartWriter{o}, value);
    return o;
  } else if constexpr (is_named_list<T>::value) {
    json o = json::object();
    for (const auto& [name, v] : value) o[name] = v;
    return o;
  } else if constexpr (list_of_fields<T>) {
    json a = json::array();
    for (const auto& e : value) a.push_back(encode_part(e));
    return a;
  } else {
    return json(value);
  }
}

// A part that could not be found: the message for people, the error for code.
json failed_part(const Error& e) { return {{"error", e.message()}, {"failure", error_json(e)}}; }

json vulkan_json(const vk::VulkanEnumeration& e, std::uint32_t selected) {
  json j = encode_part(e);
  j["selected"] = selected;
  return j;
}

json gl_driver_json(const GlDriverChoice& c, const Result<gles::GlesInfo>& gles) {
  json j = encode_part(c);
  j["gl_renderer"] = gles ? json(gles->gl_renderer) : json(nullptr);
  j["renderer_matches"] = gles ? json(renderer_matches(c, gles->gl_renderer)) : json(nullptr);
  return j;
}

json gles_json(const Result<gles::GlesInfo>& r, const std::string& vk_device_uuid, const std::string& vk_driver_uuid) {
  if (!r) return failed_part(r.error());
  json j = encode_part(*r);
  j["device_uuid_vs_vulkan"] = gles::compare_uuid(r->device_uuid, vk_device_uuid);
  j["driver_uuid_vs_vulkan"] = gles::compare_uuid(r->driver_uuid, vk_driver_uuid);
  return j;
}

json cuda_json(const Result<cuda::Enumeration>& r, const std::string& vk_device_uuid) {
  json j = r ? encode_part(*r) : failed_part(r.error());
  j["built"] = cuda::routes_built();
  j["build_note"] = cuda::build_note();
  if (!r) return j;
  for (std::size_t i = 0; i < r->devices.size(); ++i)
    j["devices"][i]["matches_vulkan_device"] = r->devices[i].uuid == vk_device_uuid;
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

template <class T>
void decode_part(const json& j, T& out);

struct PartReader {
  const json& in;
  template <class T>
  void operator()(const char* key, T& value) const {
    decode_part(in.at(key), value);
  }
};

template <class T>
void decode_part(const json& j, T& out) {
  if constexpr (has_fields<T>) {
    fields(PartReader{j}, out);
  } else if constexpr (is_named_list<T>::value) {
    for (const auto& [name, value] : j.items())
      out.emplace_back(name, value.template get<typename T::value_type::second_type>());
  } else if constexpr (list_of_fields<T>) {
    for (const json& e : j) {
      typename T::value_type one;
      decode_part(e, one);
      out.push_back(std::move(one));
    }
  } else {
    j.get_to(out);
  }
}

template <class T>
T decoded(const json& j) {
  T out;
  decode_part(j, out);
  return out;
}

Error error_at(const json& j, const std::string& where) {
  auto e = error_from_json(j);
  if (!e)
    throw Refused{where, "not accepted: an error is {step, kind, code, detail, space, native}, with a kind and a code "
                         "space this build names"};
  return std::move(*e);
}

template <class T>
Result<T> part_from(const json& j, const std::string& where) {
  if (j.contains("failure")) return error_at(j.at("failure"), where + "/failure");
  return decoded<T>(j);
}

GlDriverChoice gl_driver_from(const json& j) {
  auto c = decoded<GlDriverChoice>(j);
  if (!gl_driver_name_ok(c.requested)) throw Refused{"/gl_driver/requested", std::string("not accepted: ") + kGlDriverAccepts};
  if (c.served == "auto" || !gl_driver_name_ok(c.served))
    throw Refused{"/gl_driver/served", "not accepted: system, zink or llvmpipe"};
  return c;
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
  a.context = decoded<RunContext>(m.at("context"));
  const json& vulkan = m.at("vulkan");
  a.vulkan = decoded<vk::VulkanEnumeration>(vulkan);
  const json& selected = vulkan.at("selected");
  if (!selected.is_number_unsigned() || selected.get<std::uint64_t>() >= a.vulkan.devices.size())
    throw Refused{"/vulkan/selected", fmt::format("{} is not accepted: the index of one of the enumeration's {} devices",
                                                  selected.dump(), a.vulkan.devices.size())};
  a.selected = selected.get<std::uint32_t>();
  a.gl_driver = gl_driver_from(m.at("gl_driver"));
  a.gles = part_from<gles::GlesInfo>(m.at("gles"), "/gles");
  a.cuda = part_from<cuda::Enumeration>(m.at("cuda"), "/cuda");
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
  return {{"context", encode_part(a.context)},
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
