#include "probe/routes/t5_ucx/path.h"

#include <algorithm>

#include <fmt/format.h>

#include "ucx/info.h"

namespace extmem::probe::t5 {

namespace {
std::string joined(const std::vector<std::string>& v) { return v.empty() ? "none" : fmt::format("{}", fmt::join(v, ",")); }
bool has(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }
}  // namespace

bool path_as_expected(const PathFacts& f) {
  if (f.took.empty()) return false;
  if (f.expect == "shm") return std::all_of(f.took.begin(), f.took.end(), [](const std::string& t) { return ucx::is_shared_memory(t); });
  return std::all_of(f.took.begin(), f.took.end(), [&](const std::string& t) { return t == f.expect; });
}

std::optional<std::string> path_failure(const PathFacts& f) {
  if (path_as_expected(f)) return std::nullopt;
  const std::string lanes = fmt::format("UCX's endpoint: {}", f.lanes.empty() ? "(no lanes printed)" : f.lanes);
  if (f.expect != "shm")
    return fmt::format("UCX took {}, --expect-transport={} was asked for; {}", joined(f.took), f.expect, lanes);
  if (has(f.took, "tcp")) {
    std::string reason;
    if (f.host_shm.empty())
      reason = "UCX has no shared-memory transport on this host (posix, sysv, cma, knem, xpmem: none in a context of "
               "every transport)";
    else if (f.ucx_tls)
      reason = fmt::format("UCX_TLS={} in the environment leaves out {}, which UCX has on this host "
                           "(--expect-transport=tcp if tcp is meant)",
                           *f.ucx_tls, joined(f.host_shm));
    else
      reason = fmt::format("UCX chose tcp although {} were enabled", joined(f.host_shm));
    return fmt::format("UCX fell back to tcp: {}; {}", reason, lanes);
  }
  return fmt::format("UCX took {}, not a shared-memory transport (--expect-transport=shm); {}", joined(f.took), lanes);
}

std::string path_note(const PathFacts& f) { return fmt::format("transport={} (expected {})", joined(f.took), f.expect); }

}  // namespace extmem::probe::t5
