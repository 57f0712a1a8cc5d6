#include "probe/worker/whole_alloc.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

namespace extmem::probe::whole {
namespace {

constexpr std::size_t kWordsPerPage = kPage / sizeof(std::uint64_t);

// Byte-wise volatile access: the views may be device or shared memory at any
// alignment, and the compiler must neither drop a store nor serve a load from
// a register (the other side changes these bytes behind its back).
std::uint64_t load(std::span<const std::byte> view, std::size_t at) {
  const volatile std::byte* p = view.data() + at;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof v; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

void store(std::span<std::byte> view, std::size_t at, std::uint64_t v) {
  volatile std::byte* p = view.data() + at;
  for (std::size_t i = 0; i < sizeof v; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

bool fits(std::span<const std::byte> view, std::size_t at) { return at + sizeof(std::uint64_t) <= view.size(); }

std::uint64_t mix(std::uint64_t x) {  // SplitMix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::size_t Plan::page_of(std::size_t i) const {
  // The last stamp always sits in the last page, whatever the stride.
  const std::size_t pages = size / kPage;
  return i + 1 == count ? pages - 1 : i * stride_pages;
}

std::size_t Plan::offset(std::size_t i) const {
  const std::size_t page = page_of(i);
  // 67 is odd, so over 512 consecutive pages every word position is used once.
  return page * kPage + (page * 67 % kWordsPerPage) * sizeof(std::uint64_t);
}

Plan plan_for(std::size_t size) {
  Plan p;
  p.size = size;
  const std::size_t pages = size / kPage;
  if (pages == 0) return p;
  p.stride_pages = (pages + kMaxStampedPages - 1) / kMaxStampedPages;
  p.count = (pages + p.stride_pages - 1) / p.stride_pages;  // pages 0, N, 2N, ... below `pages`
  if ((p.count - 1) * p.stride_pages != pages - 1) ++p.count;  // plus the last page when the stride skips it
  return p;
}

std::uint64_t stamp(std::uint64_t seed, std::size_t offset) { return mix(seed ^ mix(offset)); }

void write_stamps(std::span<std::byte> view, const Plan& plan, std::uint64_t seed, std::vector<std::uint64_t>* saved) {
  if (saved != nullptr) saved->assign(plan.count, 0);
  for (std::size_t i = 0; i < plan.count; ++i) {
    const std::size_t at = plan.offset(i);
    if (!fits(view, at)) continue;
    if (saved != nullptr) (*saved)[i] = load(view, at);
    store(view, at, stamp(seed, at));
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void restore(std::span<std::byte> view, const Plan& plan, const std::vector<std::uint64_t>& saved) {
  for (std::size_t i = 0; i < plan.count && i < saved.size(); ++i)
    if (const std::size_t at = plan.offset(i); fits(view, at)) store(view, at, saved[i]);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::optional<std::size_t> first_missing(std::span<const std::byte> view, const Plan& plan, std::uint64_t seed) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < plan.count; ++i) {
    const std::size_t at = plan.offset(i);
    if (!fits(view, at) || load(view, at) != stamp(seed, at)) return at;
  }
  return std::nullopt;
}

std::string Sweep::text() const {
  if (!unaliased_at) return {};
  return fmt::format("unaliasedAt={} ({})", *unaliased_at,
                     direction == Direction::near_to_far ? "this side's write there was not seen by the other side"
                                                         : "the other side's write there was not seen here");
}

Result<Sweep> sweep(std::span<std::byte> near, const Plan& plan, const Far& far, std::uint64_t seed) {
  Sweep result;
  result.stamps = plan.count;
  auto note = [&](std::optional<std::size_t> at, Direction d) {
    if (at && (!result.unaliased_at || *at < *result.unaliased_at)) {
      result.unaliased_at = at;
      result.direction = d;
    }
  };

  // Near -> far: two rounds of different stamps, then our words back.
  std::vector<std::uint64_t> saved;
  for (std::uint64_t round = 0; round < 2; ++round) {
    const std::uint64_t s = mix(seed + round);
    write_stamps(near, plan, s, round == 0 ? &saved : nullptr);
    auto seen = far.first_missing(s);
    if (!seen) {
      restore(near, plan, saved);
      return std::move(seen).error();
    }
    note(*seen, Direction::near_to_far);
  }
  restore(near, plan, saved);

  // Far -> near.
  for (std::uint64_t round = 2; round < 4; ++round) {
    const std::uint64_t s = mix(seed + round);
    if (auto st = far.stamp(s); !st) return std::move(st).error();
    note(first_missing(near, plan, s), Direction::far_to_near);
  }
  if (auto st = far.unstamp(); !st) return std::move(st).error();
  return result;
}

void LocalFar::stamp(std::uint64_t seed) {
  write_stamps(view_, plan_, seed, stamped_ ? nullptr : &saved_);
  stamped_ = true;
}

void LocalFar::unstamp() {
  if (stamped_) restore(view_, plan_, saved_);
  stamped_ = false;
  saved_.clear();
}

Far LocalFar::as_far() {
  return Far{[this](std::uint64_t seed) -> Status {
               stamp(seed);
               return {};
             },
             [this]() -> Status {
               unstamp();
               return {};
             },
             [this](std::uint64_t seed) -> Result<std::optional<std::size_t>> { return first_missing(seed); }};
}

}  // namespace extmem::probe::whole
