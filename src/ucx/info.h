// Reading UCX's own descriptions (ucp_ep_print_info, ucp_context_print_info):
// which transports an endpoint's lanes use and which a context has. Pure
// functions of the text, so the tests feed them UCX 1.13's output verbatim.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace extmem::ucx {

/// One lane of an endpoint, from its "lane[N]:  R:tl/dev.P md[M] -> ..." line.
struct Lane {
  unsigned index = 0;
  std::string transport;  ///< "posix", "sysv", "cma", "tcp", ...
  std::string device;     ///< "memory.0", "lo.0", ...
  bool am = false;        ///< carries active messages (" am" among the lane's uses)
  bool rma = false;       ///< a "put[N]"/"get[N]" protocol line names it: UCX's RMA goes over it
  std::string line;       ///< the line as UCX printed it, trimmed of "#", runs of spaces as one
};

/// What ucp_ep_print_info said about an endpoint.
struct EndpointInfo {
  std::vector<Lane> lanes;
  /// The transports UCX's RMA (put/get) uses on this endpoint: those of the
  /// lanes a put/get line names; when none does, UCX emulates RMA with active
  /// messages, and these are the transports of the am lanes.
  std::vector<std::string> rma_transports() const;
  /// True when no lane carries put/get itself (RMA emulated over active messages).
  bool rma_emulated() const;
  /// The lane lines and the put/get lines as UCX printed them (trimmed, runs of
  /// spaces as one), joined with "; ": the row's ucx-lanes detail.
  std::string raw;
};

/// Parses ucp_ep_print_info's text. Lines it does not know are left out.
EndpointInfo parse_endpoint_info(std::string_view text);

/// The transports of a context, in resource order, each once ("tcp", "sysv",
/// "posix", "cma"), from ucp_context_print_info's "resource N : md M dev D
/// flags -- tl/dev" lines.
std::vector<std::string> context_transports(std::string_view text);

/// Whether UCX's transport `tl` moves bytes through memory both processes map
/// or copy between directly on one host: posix, sysv, cma, knem, xpmem.
bool is_shared_memory(std::string_view tl);

}  // namespace extmem::ucx
