// The T5 (UCX) rows' path check: which transport UCX moved the bytes over is
// part of the verdict (issue #32, docs/probe.md "T5"). A pure function of the
// facts, so the tests can feed it every case.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace extmem::probe::t5 {

/// What the path check looks at.
struct PathFacts {
  std::vector<std::string> took;      ///< the transports the bytes went over ("sysv", "tcp"), as UCX reported them
  std::string expect = "shm";         ///< --expect-transport: "shm" or one transport ("tcp", "posix", ...)
  /// The shared-memory transports UCX has on this host with every transport
  /// enabled (a context of TLS=all), whatever UCX_TLS says.
  std::vector<std::string> host_shm;
  std::optional<std::string> ucx_tls;  ///< UCX_TLS of the environment, when set
  std::string lanes;                   ///< UCX's endpoint lanes, verbatim (ucx::EndpointInfo::raw)
};

/// Whether the path is the one expected: every transport in `took` is a
/// shared-memory one for "shm", or is exactly the named transport otherwise.
bool path_as_expected(const PathFacts& facts);

/// Why the row FAILs on its path, or nullopt when the path is as expected.
/// With "shm" expected and tcp taken: "UCX fell back to tcp: <UCX's reason>"
/// (UCX_TLS leaving the host's shared-memory transports out, or UCX choosing
/// tcp although they were enabled), then the endpoint's lanes verbatim.
std::optional<std::string> path_failure(const PathFacts& facts);

/// "transport=sysv (expected shm)": what an OK row's leg notes.
std::string path_note(const PathFacts& facts);

}  // namespace extmem::probe::t5
