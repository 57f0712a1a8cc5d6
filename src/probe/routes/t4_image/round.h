// The T4 image rows' two rounds, written once for every importer (Vulkan, GL,
// CUDA). Each round the importer takes the image and reads all of it (compared
// texel by texel with the owner's fill), writes its rectangle and hands the
// image back, and the owner checks the rectangle and the rest; between the
// rounds the owner refills the image with a new seed. An importer supplies only
// how it reads and writes (Importer). docs/probe.md, "T4 image rows".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "probe/route_report.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/child_context.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"

namespace extmem::probe::image {

/// run_rounds' test-only faults: the importer looks at its copy transposed or
/// mirrored, which the compare must name. `role`: the importer's half.
constexpr FaultDef transpose_fault(Role role) {
  return {"transpose", role, "compare every texel", "the importer's copy is read transposed: the row must FAIL with "
                                                      "the content named transposed"};
}
constexpr FaultDef mirror_fault(Role role) {
  return {"mirror", role, "compare every texel", "the importer's copy is read mirrored: the row must FAIL with the "
                                                   "content named mirrored"};
}

/// The image's owner as an importer reaches it: across the route's socket
/// (remote_owner) or, in a same-process route, its own export.
struct Owner {
  std::function<Result<Compare>(const Expected&)> check;  ///< acquire, read back, compare
  std::function<Status(std::uint64_t seed)> fill;         ///< refill all of it with `seed`, release
};

/// The owner across `ctx`'s peer socket (owner_check, owner_fill).
Owner remote_owner(const ChildContext& ctx);

/// What one importer does in a round. Each function names its own steps
/// (ctx.step) and returns the failing call's Error, which becomes the leg's.
struct Importer {
  /// Names the importer's read in the leg's notes: "round 1 <who> read: ...".
  std::string_view who;
  /// Takes the image (acquire, semaphore wait) and reads all of it, rows
  /// tightly packed (width * 4 bytes).
  std::function<Result<std::span<const std::byte>>(int round)> read;
  /// Optional: after the round's compare, with what the importer saw.
  std::function<void(int round, const Compare& seen, const Expected& want)> after_read;
  /// Writes `rect` and hands the image back; returns what the owner should see now.
  std::function<Result<Expected>(int round, const Rect& rect)> write;
  /// Optional: after the owner saw something else than the write's Expected.
  std::function<void(int round, const Expected& want)> after_mismatch;
};

/// Rounds 1 and 2 on a width x height image for `leg`: read_ok from the
/// importer's compares, write_ok from the owner's, a note for each wrong round.
/// Test faults "transpose" and "mirror" at "compare every texel" make the
/// importer look at its copy the wrong way round, which the compare must name.
/// Returns false when a step failed: the leg then holds that step and code and
/// the half should end.
bool run_rounds(ChildContext& ctx, const Importer& importer, const Owner& owner, std::uint32_t width,
                std::uint32_t height, Leg& leg);

/// "rounds=2 rect1=(x,y wxh) rect2=(x,y wxh)": the rounds' rectangles, for a half's detail.
std::string rounds_detail(std::uint32_t width, std::uint32_t height);

/// Appends `note` to the leg's notes ("; " between two).
void add_note(Leg& leg, const std::string& note);

/// The importer's start, the same for every importer: the half's start
/// (DrivingHalf::start, waiting for the owner's setup), then the image's shape
/// read from it and checked to be the --image-size the run asked for. On failure
/// the row's facts are set in half.rep and nullopt is returned: the half ends,
/// `return half.finish();`.
struct ImportedSetup {
  Setup setup;
  vk::ImageShape shape;
};
std::optional<ImportedSetup> await_image(ChildContext& ctx, DrivingHalf& half);

}  // namespace extmem::probe::image
