#include "probe/routes/t4_image/round.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "probe/worker/peer.h"

namespace extmem::probe::image {

namespace {

// Test-only read faults (EXTMEM_TEST_FAULT ...:client:compare:transpose|mirror):
// the importer's copy seen transposed or mirrored horizontally.
std::vector<std::byte> misread(std::span<const std::byte> data, std::uint32_t w, std::uint32_t h, bool transpose) {
  std::vector<std::byte> out(data.size());
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      const std::uint32_t sx = transpose ? (y < w && x < h ? y : x) : w - 1 - x;
      const std::uint32_t sy = transpose ? (y < w && x < h ? x : y) : y;
      std::memcpy(out.data() + (std::size_t{y} * w + x) * 4, data.data() + (std::size_t{sy} * w + sx) * 4, 4);
    }
  }
  return out;
}

// What the compares decided so far; a wrong compare clears its half.
struct Seen {
  bool reads_ok = true;
  bool writes_ok = true;
};

// One round; false when a step failed (the leg has it).
bool round_of(ChildContext& ctx, const Importer& imp, const Owner& owner, std::uint32_t w, std::uint32_t h,
              int round, Leg& leg, Seen& seen_so_far) {
  auto data = imp.read(round);
  if (!data) {
    fail_leg(leg, data.error());
    return false;
  }
  ctx.step(fmt::format("round {}: compare every texel with the owner's pattern", round));
  const Expected want{owner_seed(round)};
  std::vector<std::byte> wrong_way;
  std::span<const std::byte> seen = *data;
  const bool transpose = ctx.test_fault("compare every texel", "transpose");
  if (transpose || ctx.test_fault("compare every texel", "mirror")) {
    wrong_way = misread(seen, w, h, transpose);
    seen = wrong_way;
  }
  const Compare got = compare(seen, std::size_t{w} * 4, w, h, want);
  if (!got.ok()) {
    seen_so_far.reads_ok = false;
    add_note(leg, fmt::format("round {} {} read: {}", round, imp.who, got.text()));
  }
  if (imp.after_read) imp.after_read(round, got, want);

  auto after = imp.write(round, round_rect(w, h, round));
  if (!after) {
    fail_leg(leg, after.error());
    return false;
  }
  ctx.step(fmt::format("round {}: the owner acquires and checks the rectangle and the rest", round));
  auto checked = owner.check(*after);
  if (!checked) {
    fail_leg(leg, checked.error());
    return false;
  }
  if (!checked->ok()) {
    seen_so_far.writes_ok = false;
    add_note(leg, fmt::format("round {} owner read: {}", round, checked->text()));
    if (imp.after_mismatch) imp.after_mismatch(round, *after);
  }
  if (round == 1) {
    ctx.step("round 2: the owner refills the image with a new seed and releases it");
    if (auto s = owner.fill(owner_seed(2)); !s) {
      fail_leg(leg, s.error());
      return false;
    }
  }
  return true;
}

}  // namespace

Owner remote_owner(const ChildContext& ctx) {
  return {[&ctx](const Expected& e) { return owner_check(ctx, e); },
          [&ctx](std::uint64_t seed) { return owner_fill(ctx, seed); }};
}

bool run_rounds(ChildContext& ctx, const Importer& importer, const Owner& owner, std::uint32_t width,
                std::uint32_t height, Leg& leg) {
  // A failed step leaves read_ok and write_ok as they were: the leg did not get to decide.
  Seen seen;
  for (int round = 1; round <= 2; ++round)
    if (!round_of(ctx, importer, owner, width, height, round, leg, seen)) return false;
  leg.read_ok = seen.reads_ok;
  leg.write_ok = seen.writes_ok;
  return true;
}

std::string rounds_detail(std::uint32_t width, std::uint32_t height) {
  const Rect r1 = round_rect(width, height, 1), r2 = round_rect(width, height, 2);
  return fmt::format("rounds=2 rect1=({},{} {}x{}) rect2=({},{} {}x{})", r1.x, r1.y, r1.w, r1.h, r2.x, r2.y, r2.w,
                     r2.h);
}

void add_note(Leg& leg, const std::string& note) { leg.note += (leg.note.empty() ? "" : "; ") + note; }

std::optional<ImportedSetup> await_image(ChildContext& ctx, DrivingHalf& half) {
  auto setup = half.start("the owner's exported image");
  if (!setup) return std::nullopt;
  RouteFacts& facts = half.rep.facts;
  auto shape = shape_from_info(setup->info);
  if (!shape) {
    facts.fatal = why_of(shape.error());
    facts.stop_kind = shape.error().kind;
    return std::nullopt;
  }
  if (shape->width != ctx.params().image_width || shape->height != ctx.params().image_height) {
    stop_row(facts, ErrorKind::protocol,
             fmt::format("owner announced a {}x{} image, --image-size is {}x{}", shape->width, shape->height,
                         ctx.params().image_width, ctx.params().image_height));
    return std::nullopt;
  }
  return ImportedSetup{std::move(*setup), *shape};
}

}  // namespace extmem::probe::image
