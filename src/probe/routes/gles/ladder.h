// The GLES import ladder (docs/probe.md, "T1-gles"): drivers disagree on how a
// memory-object import must be phrased, so every phrasing is tried in a fixed
// order and the report names the one accepted and each one rejected.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace extmem::probe {

/// One phrasing of the import.
struct Rung {
  bool dedicated = false;          ///< GL_DEDICATED_MEMORY_OBJECT_EXT
  std::uint64_t import_size = 0;   ///< bytes passed to glImportMemoryFdEXT
  std::uint64_t buffer_size = 0;   ///< bytes passed to glBufferStorageMemEXT
  std::string import_from;         ///< "reqs" (VkMemoryRequirements::size) or "fd" (the fd's own size)
  std::string buffer_from;         ///< "requested" or "import"

  /// "dedicated=off import=reqs(65536) buffer=requested(65536)".
  std::string label() const;
};

/// What one rung did. accepted=false carries the failing GL call and its error.
struct RungOutcome {
  bool accepted = false;
  std::string step;      ///< "glImportMemoryFdEXT", "glBufferStorageMemEXT", ...
  std::string gl_error;  ///< "GL_OUT_OF_MEMORY"
};

struct LadderResult {
  std::optional<Rung> accepted;
  std::vector<std::pair<Rung, RungOutcome>> rejected;  ///< in the order tried

  /// "accepted=<label>" or "accepted=none".
  std::string accepted_text() const;
  /// "ladder: <label>: <step> -> <error>; ..." (empty when nothing was rejected).
  std::string ladder_text() const;
};

/// The rungs {dedicated off, on} x {import size = reqs_size, fd_size} x
/// {buffer size = requested, import size}, in that order (sizes in bytes): at
/// most 8. A rung that would hand GL the same (dedicated, import size, buffer
/// size) as an earlier one is left out, so each distinct call is tried once
/// (6 rungs when reqs_size == requested, as on lavapipe and NVIDIA).
/// `fd_size` 0 means the fd has no size (not seekable): its rungs are left out.
std::vector<Rung> ladder_rungs(std::uint64_t requested, std::uint64_t reqs_size, std::uint64_t fd_size);

/// Tries rungs in order until `try_rung` accepts one. `try_rung` must leave no
/// GL object behind when it rejects.
LadderResult walk_ladder(const std::vector<Rung>& rungs, const std::function<RungOutcome(const Rung&)>& try_rung);

}  // namespace extmem::probe
