// The parameters of one route half: the one record the parent fills from the
// options, sends as a `job` (probe/job_codec.h) and a half reads through
// ChildContext::params(), whether a warm worker or a fresh child runs it.
//
// Adding a parameter: a member here and its line in visit_fields() (which is
// what the job codec encodes, decodes and bounds), the option that sets it
// (ProbeOptions and validate(); the command's text grammar,
// src/cli/probe_option_text.cpp, and its flag, src/cli/probe_command.cpp;
// find()'s copy into EngineOptions::base.half), and the code that uses it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/os/ipc.h"
#include "extmem/probe/probe.h"
#include "probe/layout.h"

namespace extmem::probe {

/// Which half of a route: the allocating side or the driving side.
enum class Role { server, client };
const char* to_string(Role role);

/// A whole number the codec accepts: min..max inclusive, and a multiple of `step`.
struct WholeRange {
  std::int64_t min, max, step = 1;
};
/// A real number the codec accepts: min..max inclusive, finite.
struct RealRange {
  double min, max;
};
/// A string the codec accepts: 1..max_bytes of printable ASCII, without spaces.
struct TextLimit {
  std::size_t max_bytes;
};
/// A string the codec accepts: one of a fixed set of names (gl_driver_name_ok()).
struct GlDriverName {};

/// The largest allocation a job may ask for, bytes: larger than any heap, small
/// enough that no size arithmetic of a route can overflow.
inline constexpr std::int64_t kMaxJobSize = std::int64_t{1} << 40;

struct HalfParams {
  std::string row;                   ///< the route's row (RouteDef::row, no "@" suffix)
  Role role = Role::server;
  std::uint32_t device_index = 0;    ///< Vulkan physical device index phase A selected
  Layout layout{kDefaultSize, false};  ///< allocation bytes and where the regions lie
  double soak_s = 0;                 ///< --soak seconds; 0: no soak
  bool measure = false;              ///< collect --measure figures (worker/measure.h)
  unsigned measure_repeats = kDefaultMeasureRepeats;  ///< samples per figure when measuring
  int memory_type = -1;              ///< the exporting side allocates from this type; -1: auto
  /// GL driver to put in place before EGL loads: a fresh child takes phase A's
  /// choice (system, zink, llvmpipe); a warm worker has chosen at its start from
  /// the same request and ignores this (docs/probe.md, "Which GL serves").
  std::string gl_driver{to_string(kDefaultGlDriver)};
  std::uint32_t image_width = kDefaultImageSide, image_height = kDefaultImageSide;  ///< --image-size: the image rows' image, texels
  /// How the fds of the peer socket cross: SCM_RIGHTS, or pidfd_getfd for a row's
  /// "@pidfd" twin (os/ipc.h; both halves get the same one).
  os::FdTransport fd_transport = os::FdTransport::scm;
  /// --expect-transport: the path the UCX rows expect ("shm", "posix", "sysv", "cma", "tcp").
  std::string expect_transport{to_string(kDefaultExpectTransport)};

  bool operator==(const HalfParams&) const = default;
};

/// Calls `visit(name, member, rule)` (or `visit(name, member)` for bool, Role and
/// FdTransport) for every member of `p`, in wire order: the single list of
/// fields the job codec writes, requires and bounds. `P` is HalfParams or const HalfParams.
template <class P, class Visit>
void visit_fields(P& p, Visit&& visit) {
  visit("row", p.row, TextLimit{128});
  visit("role", p.role);
  visit("device_index", p.device_index, WholeRange{0, 1023});
  visit("size", p.layout.size, WholeRange{static_cast<std::int64_t>(kMinSize), kMaxJobSize, 4096});
  visit("regions_at_end", p.layout.regions_at_end);
  visit("soak_s", p.soak_s, RealRange{0, 3600});
  visit("measure", p.measure);
  visit("measure_repeats", p.measure_repeats, WholeRange{1, 100});
  visit("memory_type", p.memory_type, WholeRange{-1, 31});  // VK_MAX_MEMORY_TYPES is 32
  visit("gl_driver", p.gl_driver, GlDriverName{});
  visit("image_width", p.image_width, WholeRange{1, kMaxImageSide});
  visit("image_height", p.image_height, WholeRange{1, kMaxImageSide});
  visit("fd_transport", p.fd_transport);
  visit("expect_transport", p.expect_transport, TextLimit{16});
}

}  // namespace extmem::probe
