#include "probe/worker/setup_info.h"

#include <fmt/format.h>

#include "probe/json_kind.h"
#include "probe/measure_codec.h"
#include "probe/wire_fields.h"

namespace extmem::probe::peer {
namespace setup_info_detail {

using nlohmann::json;
using wire::Fields;

constexpr std::string_view kInfo = "peer setup.info";

template <class T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

std::uint32_t u32(Fields& f, const char* name) { return static_cast<std::uint32_t>(f.whole(name, UINT32_MAX)); }

ImageCreate image_of(Fields& f) {
  ImageCreate c;
  c.format = u32(f, "format");
  c.format_name = f.text("format_name", 64);
  c.width = u32(f, "width");
  c.height = u32(f, "height");
  c.tiling = u32(f, "tiling");
  c.tiling_name = f.text("tiling_name", 64);
  c.usage = u32(f, "usage");
  c.flags = u32(f, "flags");
  c.mip_levels = u32(f, "mip_levels");
  c.array_layers = u32(f, "array_layers");
  c.samples = u32(f, "samples");
  c.layout = f.text("layout", 64);
  c.dedicated_required = f.boolean("dedicated_required");
  c.dedicated_preferred = f.boolean("dedicated_preferred");
  return c;
}

IpcHandles ipc_of(Fields& f) {
  IpcHandles h;
  h.mem_handle = f.text("mem_handle", 256);
  h.view_handle = f.absent_or_text("view_handle");
  h.view_handle_error = f.absent_or_text("view_handle_error");
  h.view_offset = f.whole("view_offset");
  h.range_size = f.whole("range_size");
  h.event_handle = f.text("event_handle", 256);
  return h;
}

ChunkList chunks_of(Fields& f) {
  ChunkList c;
  c.sizes = f.absent_or_whole_list("sizes", kMaxSetupChunks).value_or(std::vector<std::uint64_t>{});
  if (c.sizes.empty()) f.refuse("sizes", "missing or empty: an array of 1 to 64 chunk sizes is accepted");
  c.total = f.whole("total");
  c.fd_targets = f.absent_or_text_list("fd_targets", kMaxSetupChunks).value_or(std::vector<std::string>{});
  return c;
}

Seals seals_of(Fields& f) {
  Seals s;
  s.seals = u32(f, "seals");
  s.noexec = f.text("noexec", 256);
  return s;
}

}  // namespace setup_info_detail

nlohmann::json to_json(const SetupInfo& info) {
  using namespace setup_info_detail;
  json j = json::object();
  put(j, "allocation_size", info.allocation_size);
  put(j, "memory_type_index", info.memory_type_index);
  put(j, "dedicated", info.dedicated);
  put(j, "fd_size", info.fd_size);
  put(j, "fd_target", info.fd_target);
  put(j, "exportable_advertised", info.exportable_advertised);
  put(j, "device_uuid", info.device_uuid);
  put(j, "granularity", info.granularity);
  if (const auto& c = info.image)
    j["image"] = {{"format", c->format},
                  {"format_name", c->format_name},
                  {"width", c->width},
                  {"height", c->height},
                  {"tiling", c->tiling},
                  {"tiling_name", c->tiling_name},
                  {"usage", c->usage},
                  {"flags", c->flags},
                  {"mip_levels", c->mip_levels},
                  {"array_layers", c->array_layers},
                  {"samples", c->samples},
                  {"layout", c->layout},
                  {"dedicated_required", c->dedicated_required},
                  {"dedicated_preferred", c->dedicated_preferred}};
  if (const auto& h = info.ipc) {
    json i = {{"mem_handle", h->mem_handle},
              {"view_offset", h->view_offset},
              {"range_size", h->range_size},
              {"event_handle", h->event_handle}};
    put(i, "view_handle", h->view_handle);
    put(i, "view_handle_error", h->view_handle_error);
    j["ipc"] = std::move(i);
  }
  if (const auto& c = info.chunks) j["chunks"] = {{"sizes", c->sizes}, {"total", c->total}, {"fd_targets", c->fd_targets}};
  if (const auto& s = info.seals) j["seals"] = {{"seals", s->seals}, {"noexec", s->noexec}};
  if (info.measure) j["measure"] = to_json(*info.measure);
  return j;
}

Result<SetupInfo> decode_setup_info(const nlohmann::json& j) {
  using namespace setup_info_detail;
  if (!j.is_object()) return wire::refusal(kInfo, {}, fmt::format("found {}: an object is accepted", json_kind(j)));
  Fields f(j, kInfo);
  SetupInfo info;
  info.allocation_size = f.absent_or_whole("allocation_size");
  if (auto t = f.absent_or_whole("memory_type_index")) {
    // VK_MAX_MEMORY_TYPES is 32 (Vulkan spec, VkPhysicalDeviceMemoryProperties).
    if (*t >= 32) f.refuse("memory_type_index", fmt::format("{} is not accepted: a memory type index from 0 to 31", *t));
    info.memory_type_index = static_cast<std::uint32_t>(*t);
  }
  info.dedicated = f.absent_or_boolean("dedicated");
  info.fd_size = f.absent_or_whole("fd_size");
  info.fd_target = f.absent_or_text("fd_target");
  info.exportable_advertised = f.absent_or_boolean("exportable_advertised");
  info.device_uuid = f.absent_or_text("device_uuid");
  info.granularity = f.absent_or_whole("granularity");
  info.image = wire::nested<ImageCreate>(f, "image", image_of);
  info.ipc = wire::nested<IpcHandles>(f, "ipc", ipc_of);
  info.chunks = wire::nested<ChunkList>(f, "chunks", chunks_of);
  info.seals = wire::nested<Seals>(f, "seals", seals_of);
  if (const json* m = f.get("measure", false)) {
    if (auto decoded = decode_measurement(*m, fmt::format("{}.measure", kInfo))) info.measure = std::move(*decoded);
    else f.adopt(std::move(decoded).error());
  }
  return wire::finished(f, std::move(info));
}

}  // namespace extmem::probe::peer
