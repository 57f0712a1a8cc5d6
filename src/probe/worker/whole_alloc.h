// Whole-allocation aliasing (docs/probe.md, "The whole allocation"): the
// region compares and the window's zerocopy check see 32 KiB; an import that
// shares only part of a large allocation (the rest a private copy, zero pages
// or another buffer) would pass them. The sweep here writes one 64-bit stamp
// per page through one side and has the other side look for every stamp, in
// both directions, so a page that is not shared is found wherever it lies.
//
// The pieces are plain functions over views so that the probe's peer
// conversation (peer.cpp), the GPU form (gpu_access.cpp) and the tests use
// exactly the same plan, stamps and comparison.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::probe::whole {

inline constexpr std::size_t kPage = 4096;  ///< bytes: the sweep's unit (the smallest page a mapping can switch at)
/// At most this many pages get a stamp (1 GiB of 4 KiB pages). Up to 1 GiB every
/// page is stamped; above, every Nth page, N = ceil(pages / kMaxStampedPages),
/// and always the last page.
inline constexpr std::size_t kMaxStampedPages = 262144;

/// Where the stamps go in an allocation of `size` bytes. Stamp i sits in page
/// page_of(i), at a word position that moves through the page from stamp to
/// stamp (so a mapping shifted by less than a page cannot keep every stamp).
struct Plan {
  std::size_t size = 0;          ///< bytes covered, from the start of the allocation
  std::size_t stride_pages = 1;  ///< pages between stamped pages (1: every page)
  std::size_t count = 0;         ///< stamps

  /// Page index (of kPage bytes) of stamp `i` (< count).
  std::size_t page_of(std::size_t i) const;
  /// Byte offset of stamp `i` from the start of the allocation (8-byte aligned).
  std::size_t offset(std::size_t i) const;
};

/// The plan for `size` bytes (whole pages only: a tail shorter than a page gets no stamp).
Plan plan_for(std::size_t size);

/// The stamp written at `offset` for `seed`: depends on both, so a stamp seen at
/// another offset, or left from an earlier round, does not match.
std::uint64_t stamp(std::uint64_t seed, std::size_t offset);

/// Writes every stamp of `seed` into `view` (the allocation as this side maps it)
/// with volatile stores and a fence. When `saved` is non-null it receives the
/// words that were there, for restore(). Stamps past view.size() are not written.
void write_stamps(std::span<std::byte> view, const Plan& plan, std::uint64_t seed, std::vector<std::uint64_t>* saved);

/// Puts back the words write_stamps saved.
void restore(std::span<std::byte> view, const Plan& plan, const std::vector<std::uint64_t>& saved);

/// Offset of the first stamp of `seed` that `view` does not hold (a stamp past
/// the end of the view counts as missing), or nullopt when every one is there.
std::optional<std::size_t> first_missing(std::span<const std::byte> view, const Plan& plan, std::uint64_t seed);

/// The far side of a sweep: the other process's view of the allocation (over the
/// peer socket, peer.h) or, in tests, a second mapping. Each may fail; the error
/// ends the sweep unchanged.
struct Far {
  /// Far side writes the stamps of `seed`; the first call after unstamp() also
  /// keeps the words it overwrote.
  std::function<Status(std::uint64_t seed)> stamp;
  /// Far side puts back the words kept by the first stamp().
  std::function<Status()> unstamp;
  /// Offset of the first stamp of `seed` the far side does not see.
  std::function<Result<std::optional<std::size_t>>(std::uint64_t seed)> first_missing;
};

/// Which direction lost a page.
enum class Direction { near_to_far, far_to_near };

/// The sweep's answer.
struct Sweep {
  std::size_t stamps = 0;                  ///< stamps per round (plan.count)
  std::optional<std::size_t> unaliased_at;  ///< lowest offset, bytes from the allocation start, not shared
  Direction direction = Direction::near_to_far;  ///< meaningful with unaliased_at

  /// "" when shared; else "unaliasedAt=<offset> (<which side's write the other missed>)".
  std::string text() const;
};

/// Both directions, two rounds each (the second catches a far side that took a
/// snapshot after the first): near writes stamps, far looks; far writes, near
/// looks. Both sides get their original words back before it returns, also when
/// a page is not shared; after a far error the far side may keep its stamps.
/// `near` is this side's view of `plan.size` bytes; `seed` varies the stamps.
Result<Sweep> sweep(std::span<std::byte> near, const Plan& plan, const Far& far, std::uint64_t seed);

/// The far side of a sweep served from a local view (the serving half, tests):
/// keeps the overwritten words between stamp and unstamp.
class LocalFar {
 public:
  /// `view` must outlive this object; `plan` is the one the near side uses.
  LocalFar(std::span<std::byte> view, Plan plan) : view_(view), plan_(plan) {}
  void stamp(std::uint64_t seed);
  void unstamp();
  std::optional<std::size_t> first_missing(std::uint64_t seed) const { return whole::first_missing(view_, plan_, seed); }
  /// A Far whose calls go to this object (which must outlive it).
  Far as_far();

 private:
  std::span<std::byte> view_;
  Plan plan_;
  std::vector<std::uint64_t> saved_;
  bool stamped_ = false;
};

}  // namespace extmem::probe::whole
