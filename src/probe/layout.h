// Where the 4 KiB verification regions sit in the shared allocation (docs/probe.md, "Regions and payloads").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace extmem::probe {

/// One region per writer.
enum class Region : int {
  A = 0,  ///< the allocating side, CPU, before sharing (the payload)
  B = 1,  ///< the other side through its plain host mapping
  C = 2,  ///< the other side through its imported Vulkan mapping
  D = 3,  ///< the other side through its imported GL mapping (cross-process)
  E = 4,  ///< the GPU (a transfer write)
  F = 5,  ///< an in-process GL import
};

inline constexpr std::size_t kRegionSize = 4096;       ///< bytes
inline constexpr std::size_t kWindowRegions = 8;       ///< the window spans 8 regions (6 used)
inline constexpr std::size_t kMinSize = kWindowRegions * kRegionSize;

/// Region offsets for an allocation of `size` bytes.
struct Layout {
  std::size_t size = 0;          ///< allocation bytes the routes share
  bool regions_at_end = false;   ///< window in the last 8 x 4 KiB instead of the first

  std::size_t window_offset() const { return regions_at_end ? size - kMinSize : 0; }
  std::size_t offset(Region r) const { return window_offset() + static_cast<std::size_t>(r) * kRegionSize; }
  template <typename T>
  std::span<T> region(std::span<T> view, Region r) const { return view.subspan(offset(r), kRegionSize); }
  bool operator==(const Layout&) const = default;
};

/// The pattern seed of each region's writer.
inline std::uint64_t seed_of(Region r) { return 0x65786d656d000000ull + static_cast<std::uint64_t>(r) * 0x1001; }

/// "A".."F".
inline char region_name(Region r) { return static_cast<char>('A' + static_cast<int>(r)); }

}  // namespace extmem::probe

namespace extmem::probe {
/// Seed of a GL-side GPU write into `r`, which lands after the CPU write through the GL mapping.
inline std::uint64_t gpu_seed_of(Region r) { return seed_of(r) ^ 0x4750550000000000ull; }
}  // namespace extmem::probe
