// What the allocating half tells the importing half in its setup message
// (peer_codec.h): the allocation as the importer must repeat it, and each
// route family's own facts (an image's create info, CUDA IPC handles, VMM
// chunks, memfd seals). Typed and decoded strictly: a field of another type
// or out of its range, or one no route sends, ends the route as a protocol
// error naming it, where a loose read would have taken a default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "extmem/probe/measure_figures.h"

namespace extmem::probe::peer {

/// An exported image's create info: an importer must create an identical
/// image (Vulkan spec, "External Memory Handle Types": the same creation
/// parameters) and hand it over in `layout`.
struct ImageCreate {
  std::uint32_t format = 0;    ///< VkFormat's value
  std::string format_name;     ///< display only
  std::uint32_t width = 0;     ///< texels
  std::uint32_t height = 0;    ///< texels
  std::uint32_t tiling = 0;    ///< VkImageTiling's value
  std::string tiling_name;     ///< display only
  std::uint32_t usage = 0;     ///< VkImageUsageFlags
  std::uint32_t flags = 0;     ///< VkImageCreateFlags
  std::uint32_t mip_levels = 0;
  std::uint32_t array_layers = 0;
  std::uint32_t samples = 0;   ///< VkSampleCountFlagBits
  std::string layout;          ///< the handover layout's name ("GENERAL")
  bool dedicated_required = false;   ///< VkMemoryDedicatedRequirements of the image
  bool dedicated_preferred = false;
  bool operator==(const ImageCreate&) const = default;
};

/// T1-cuda-ipc's handles (cuIpcGetMemHandle / cuIpcGetEventHandle), as hex of their bytes.
struct IpcHandles {
  std::string mem_handle;                        ///< of the allocation's base
  std::optional<std::string> view_handle;        ///< of the view inside the range, when the driver gave one
  std::optional<std::string> view_handle_error;  ///< why not, when it did not
  std::uint64_t view_offset = 0;                 ///< bytes from the range's base to the view
  std::uint64_t range_size = 0;                  ///< bytes (cuMemGetAddressRange)
  std::string event_handle;                      ///< the ordering proof's interprocess event
  bool operator==(const IpcHandles&) const = default;
};

/// T1-cuda-vmm-multichunk's chunks: one fd per chunk, the first on the setup
/// frame, the rest on one data frame each.
struct ChunkList {
  std::vector<std::uint64_t> sizes;     ///< bytes of each chunk, in address order
  std::uint64_t total = 0;              ///< bytes of the whole range
  std::vector<std::string> fd_targets;  ///< readlink of each exported fd, display only
  bool operator==(const ChunkList&) const = default;
};

/// T3-memfd-sealed: the seals the sender added and read back.
struct Seals {
  std::uint32_t seals = 0;  ///< F_GET_SEALS after F_ADD_SEALS
  std::string noexec;       ///< how the memfd was made with respect to MFD_NOEXEC_SEAL, display only
  bool operator==(const Seals&) const = default;
};

/// Most chunks a ChunkList carries (one fd each).
inline constexpr std::size_t kMaxSetupChunks = 64;

/// The setup's fields. Each route sends what its importer reads; absent fields
/// read as absent, never as a default taken silently.
struct SetupInfo {
  /// Bytes of the shared allocation: VkMemoryAllocateInfo::allocationSize of a
  /// Vulkan export, the CUDA allocation's size, or the host memory's.
  std::optional<std::uint64_t> allocation_size;
  std::optional<std::uint32_t> memory_type_index;  ///< Vulkan exports: the allocation's memory type
  std::optional<bool> dedicated;                   ///< Vulkan exports: a dedicated allocation
  std::optional<std::uint64_t> fd_size;            ///< bytes, lseek(fd, 0, SEEK_END) of the exported fd at export
  std::optional<std::string> fd_target;            ///< readlink of the exported fd, display only
  std::optional<bool> exportable_advertised;       ///< the driver's EXPORTABLE bit for this handle type
  std::optional<std::string> device_uuid;          ///< the exporter's Vulkan deviceUUID, hex
  std::optional<std::uint64_t> granularity;        ///< CUDA VMM exports: bytes (cuMemGetAllocationGranularity)
  std::optional<ImageCreate> image;
  std::optional<IpcHandles> ipc;
  std::optional<ChunkList> chunks;
  std::optional<Seals> seals;
  /// The exporter's --measure figures (measure::collected()); the importer adds
  /// their "route" part to its own (measure::merge_peer).
  std::optional<Measurement> measure;
  bool operator==(const SetupInfo&) const = default;
};

nlohmann::json to_json(const SetupInfo& info);

/// The info of a setup message, checked: every field of its type and range,
/// nested objects likewise, no field this build does not send. Errors:
/// protocol, step "peer setup.info" or "peer setup.info.FIELD[.FIELD]"; the
/// detail says what was found and what is accepted.
Result<SetupInfo> decode_setup_info(const nlohmann::json& j);

}  // namespace extmem::probe::peer
