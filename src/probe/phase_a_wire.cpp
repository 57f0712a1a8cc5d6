#include "probe/phase_a_wire.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/os/ipc.h"
#include "probe/gl_driver.h"

namespace extmem {
// Field by field, so a renamed member is a compile error here, not a silent gap.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Error, step, kind, code, detail, space, native)
namespace vk {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemoryHeapInfo, size, flags, flag_names)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemoryTypeInfo, index, heap_index, flags, flag_names)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ExternalSemaphoreInfo, handle_type, semaphore_type, queried, features, exportable,
                                   importable, export_from, compatible)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ExternalBufferInfo, handle_type, handle_type_bit, features, exportable, importable,
                                   dedicated_only, export_from, compatible)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ExternalImageInfo, handle_type, tiling, result, result_code, features, exportable, importable,
                                   dedicated_only, export_from, compatible, max_width, max_height, max_mip_levels,
                                   max_array_layers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DrmModifierInfo, modifier, plane_count, tiling_features, dma_buf_result,
                                   dma_buf_result_code, dma_buf_exportable, dma_buf_importable)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceInfo, index, name, vendor_id, device_id, device_type, api_version,
                                   driver_version, driver_name, driver_info, device_uuid, driver_uuid, heaps, types,
                                   extensions, external_buffers, external_semaphores, min_imported_host_pointer_alignment,
                                   max_image_dimension_2d, external_images, drm_modifiers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(VulkanEnumeration, loader_version, devices)
}  // namespace vk
namespace gles {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GlesInfo, platform, egl_vendor, egl_version, gl_vendor, gl_renderer, gl_version,
                                   extensions, device_uuid, driver_uuid)
}  // namespace gles
namespace cuda {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceInfo, ordinal, name, uuid, total_mem, posix_fd, vmm, host_register, dma_buf,
                                   ipc_event, fabric, gpu_direct_rdma, granularity_minimum, granularity_recommended)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Enumeration, library, driver_version, devices)
}  // namespace cuda
}  // namespace extmem

namespace extmem::probe {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GlDriverChoice, requested, served, why, env)
namespace {

using nlohmann::json;

template <typename T>
json part(const Result<T>& r) {
  return r ? json{{"value", *r}} : json{{"error", r.error()}};
}

template <typename T>
Result<T> unpart(const json& j) {
  if (j.contains("value")) return j.at("value").get<T>();
  return j.at("error").get<Error>();
}

}  // namespace

std::string encode_phase_a(const PhaseAFindings& f) {
  return json{{"vulkan", part(f.vulkan)}, {"selected", part(f.selected)}, {"gl_driver", f.gl_driver}, {"gles", part(f.gles)},
              {"cuda", part(f.cuda)}}
      .dump();
}

namespace {

Error phase_a_error(std::string field, std::string detail) {
  return Error{field.empty() ? std::string("decode phase A") : "decode phase A " + field, ErrorKind::protocol, {},
               std::move(detail)};
}

// An Error's kind and space are enums read as numbers: only the values they name.
bool error_ok(const Error& e) {
  return static_cast<int>(e.kind) >= 0 && e.kind <= ErrorKind::no_driver && e.space <= CodeSpace::extmem;
}
template <typename T>
bool part_ok(const Result<T>& r) {
  return r || error_ok(r.error());
}

}  // namespace

Result<PhaseAFindings> decode_phase_a(std::string_view text) {
  if (text.size() > os::kMaxPayload)
    return phase_a_error({}, fmt::format("{} bytes is not accepted: at most {}", text.size(), os::kMaxPayload));
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return phase_a_error({}, "not JSON: a JSON object is accepted");
  if (!j.is_object()) return phase_a_error({}, "not a JSON object");
  PhaseAFindings f;
  try {
    f.vulkan = unpart<vk::VulkanEnumeration>(j.at("vulkan"));
    f.selected = unpart<std::uint32_t>(j.at("selected"));
    f.gl_driver = j.at("gl_driver").get<GlDriverChoice>();
    f.gles = unpart<gles::GlesInfo>(j.at("gles"));
    f.cuda = unpart<cuda::Enumeration>(j.at("cuda"));
  } catch (const json::exception& e) {
    return phase_a_error({}, e.what());
  }
  // Exactly what encode_phase_a writes for the decoded value: this refuses unknown
  // fields, numbers out of their member's range (a wrapped -1, a truncated 1.5)
  // and a part holding both a value and an error, and names the first such field.
  const json again = json::parse(encode_phase_a(f));
  if (again != j) {
    const json patch = json::diff(again, j);
    const std::string where = patch.empty() ? std::string() : patch[0].value("path", std::string());
    return phase_a_error(where, "not accepted: an unknown field, or a value outside its field's type or range");
  }
  if (!part_ok(f.vulkan) || !part_ok(f.selected) || !part_ok(f.gles) || !part_ok(f.cuda))
    return phase_a_error("error", "an error's kind or code space is not one this build names");
  if (!gl_driver_name_ok(f.gl_driver.requested))
    return phase_a_error("/gl_driver/requested", std::string("not accepted: ") + kGlDriverAccepts);
  if (f.gl_driver.served == "auto" || !gl_driver_name_ok(f.gl_driver.served))
    return phase_a_error("/gl_driver/served", "not accepted: system, zink or llvmpipe");
  if (f.vulkan && f.selected && *f.selected >= f.vulkan->devices.size())
    return phase_a_error("/selected", fmt::format("device {} is not accepted: the enumeration has {} devices",
                                                  *f.selected, f.vulkan->devices.size()));
  return f;
}

Error driver_not_started(const char* driver) {
  return Error{fmt::format("not started, no selected row uses {}", driver), ErrorKind::unsupported, {}, {}};
}

}  // namespace extmem::probe
