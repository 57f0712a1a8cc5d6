#include "extmem/os/clock.h"
#include "probe/worker/soak.h"


#include "extmem/core/pattern.h"
#include "probe/worker/peer.h"

namespace extmem::probe {
namespace {

constexpr std::uint64_t kWordsPerRegion = kRegionSize / 4;

}  // namespace

OtherSide peer_side(const ChildContext& ctx) {
  return OtherSide{
      [&ctx](Region r, std::uint64_t seed) { return peer_count_stale(ctx, r, seed); },
      [&ctx](Region r, std::uint64_t seed) { return peer_write(ctx, r, seed); },
  };
}

OtherSide local_side(std::span<std::byte> view, const Layout& layout) {
  return OtherSide{
      [view, layout](Region r, std::uint64_t seed) -> Result<std::size_t> {
        return pattern::count_stale_words(layout.region(view, r), seed);
      },
      [view, layout](Region r, std::uint64_t seed) -> Status {
        pattern::fill(layout.region(view, r), seed);
        return {};
      },
  };
}

SoakCount run_soak(ChildContext& ctx, const SoakPlan& plan, const OtherSide& other, std::optional<Error>* error) {
  ctx.step("soak: repeat the round trip and count stale words");
  SoakCount count;
  const Layout& layout = ctx.layout();
  const double deadline = os::monotonic_seconds() + plan.seconds;
  auto add = [&](const Result<std::size_t>& stale) {
    if (!stale) {
      if (error != nullptr) *error = stale.error();
      return false;
    }
    count.stale += *stale;
    count.words += kWordsPerRegion;
    return true;
  };
  for (std::uint64_t round = 1; os::monotonic_seconds() < deadline; ++round) {
    const std::uint64_t base = 0x736f616b00000000ull ^ (round * 0x9e3779b97f4a7c15ull);
    const std::uint64_t s_local = base ^ 1, s_gpu = base ^ 2, s_other = base ^ 3;
    if (!plan.local.empty()) {
      pattern::fill(layout.region(plan.local, plan.local_region), s_local);
      if (!add(other.count_stale(plan.local_region, s_local))) break;
    }
    if (auto s = other.write(plan.other_region, s_other); !s) {
      if (error != nullptr) *error = s.error();
      break;
    }
    if (!plan.local.empty() && !add(pattern::count_stale_words(layout.region(plan.local, plan.other_region), s_other)))
      break;
    if (plan.gpu != nullptr) {
      // The GPU reads what the other side just wrote, and writes for the other side to check.
      if (!add((*plan.gpu)(plan.other_region, s_other, plan.gpu_region, s_gpu))) break;
      if (!add(other.count_stale(plan.gpu_region, s_gpu))) break;
    }
    count.rounds = round;
  }
  return count;
}

}  // namespace extmem::probe
