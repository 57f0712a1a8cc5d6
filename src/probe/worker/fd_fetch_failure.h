// How a row and phase A read a failed pidfd fetch: a refusal (UNSUPPORTED) or a
// resource limit (could not be tried), docs/probe.md "How fds cross".
#pragma once

#include <string>

#include "extmem/core/error.h"
#include "extmem/core/verdict.h"

namespace extmem::probe {

/// Whether a failed fd fetch hit a resource limit (errno EMFILE, ENFILE or
/// ENOMEM, in pidfd_open or pidfd_getfd) rather than a refusal: the transport
/// could not be tried, which says nothing about whether it is permitted.
bool fd_fetch_hit_resource_limit(const Error& failed);

/// "<step> -> <code> (<detail>)" of a failed fetch, empty parts left out: how the
/// rows' reasons, phase A's text and the document's fd_transport.refused.text say it.
std::string fd_fetch_failure_text(const Error& failed);

/// The facts of a row whose fd could not be fetched: unsupported
/// fd_refusal_reason() for a refusal (EPERM, ESRCH, ...); fatal "fd transport
/// pidfd could not be tried: <step> -> <code> (<detail>): a resource limit, not
/// a refusal" when fd_fetch_hit_resource_limit() (the row FAILs: it did not run).
RouteFacts fd_fetch_failure_facts(const Error& failed);

}  // namespace extmem::probe
