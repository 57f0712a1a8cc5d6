// The UCX entry points the probe calls, resolved at run time from
// libucp.so.0 (and, through it, libucs.so.0): the binary never links UCX, so
// it starts, and runs every other row, on a machine without it (issue #32).
// The types come from libucx-dev's headers; a build without them compiles the
// same API, and load() then says UCX was not built in (the rows SKIP);
// -DEXTMEM_NO_UCX makes that build on a machine that has them.
#pragma once

#include <string>

#include "extmem/core/error.h"

#if __has_include(<ucp/api/ucp.h>) && !defined(EXTMEM_NO_UCX)
#include <ucp/api/ucp.h>
#define EXTMEM_HAVE_UCX_HEADERS 1
#endif

namespace extmem::ucx {

/// The library load() opens: "libucp.so.0", or the test-only override in the
/// environment variable EXTMEM_UCX_LIBRARY (a path or soname), which lets the
/// tests stand for a machine without UCX.
std::string library_name();

#ifdef EXTMEM_HAVE_UCX_HEADERS
/// The resolved entry points (UCX 1.13's ABI; ucp_init is the header's inline
/// wrapper of ucp_init_version, so the table holds the latter).
struct Api {
  const char* (*ucs_status_string)(ucs_status_t);
  const char* (*ucp_get_version_string)();
  ucs_status_t (*ucp_config_read)(const char*, const char*, ucp_config_t**);
  ucs_status_t (*ucp_config_modify)(ucp_config_t*, const char*, const char*);
  void (*ucp_config_release)(ucp_config_t*);
  ucs_status_t (*ucp_init_version)(unsigned, unsigned, const ucp_params_t*, const ucp_config_t*, ucp_context_h*);
  void (*ucp_cleanup)(ucp_context_h);
  void (*ucp_context_print_info)(const ucp_context_h, FILE*);
  ucs_status_t (*ucp_worker_create)(ucp_context_h, const ucp_worker_params_t*, ucp_worker_h*);
  void (*ucp_worker_destroy)(ucp_worker_h);
  ucs_status_t (*ucp_worker_get_address)(ucp_worker_h, ucp_address_t**, size_t*);
  void (*ucp_worker_release_address)(ucp_worker_h, ucp_address_t*);
  unsigned (*ucp_worker_progress)(ucp_worker_h);
  ucs_status_t (*ucp_mem_map)(ucp_context_h, const ucp_mem_map_params_t*, ucp_mem_h*);
  ucs_status_t (*ucp_mem_unmap)(ucp_context_h, ucp_mem_h);
  ucs_status_t (*ucp_mem_query)(const ucp_mem_h, ucp_mem_attr_t*);
  ucs_status_t (*ucp_rkey_pack)(ucp_context_h, ucp_mem_h, void**, size_t*);
  void (*ucp_rkey_buffer_release)(void*);
  ucs_status_t (*ucp_ep_create)(ucp_worker_h, const ucp_ep_params_t*, ucp_ep_h*);
  ucs_status_ptr_t (*ucp_ep_close_nbx)(ucp_ep_h, const ucp_request_param_t*);
  void (*ucp_ep_print_info)(ucp_ep_h, FILE*);
  ucs_status_ptr_t (*ucp_ep_flush_nbx)(ucp_ep_h, const ucp_request_param_t*);
  ucs_status_t (*ucp_ep_rkey_unpack)(ucp_ep_h, const void*, ucp_rkey_h*);
  ucs_status_t (*ucp_rkey_ptr)(ucp_rkey_h, uint64_t, void**);
  void (*ucp_rkey_destroy)(ucp_rkey_h);
  ucs_status_ptr_t (*ucp_put_nbx)(ucp_ep_h, const void*, size_t, uint64_t, ucp_rkey_h, const ucp_request_param_t*);
  ucs_status_ptr_t (*ucp_get_nbx)(ucp_ep_h, void*, size_t, uint64_t, ucp_rkey_h, const ucp_request_param_t*);
  ucs_status_t (*ucp_request_check_status)(void*);
  void (*ucp_request_free)(void*);
};

/// The entry points, loaded on the first call and kept for the life of the
/// process (UCX is never unloaded: its transports and async thread outlive a
/// context). Not thread-safe on the first call. Errors: no_driver, step
/// "dlopen(<name>)", code "no UCX", detail dlerror()'s text, when the library
/// does not load; unsupported, step "dlsym(<first missing>)", code "missing
/// symbol", detail naming every missing entry point. The same error on every
/// later call.
Result<const Api*> load();

/// Error from a UCX status: step `step`, kind `kind` (default driver), code the
/// status's enum name ("UCS_ERR_UNREACHABLE"), native its number (CodeSpace
/// ucs_status), detail ucs_status_string()'s words, verbatim.
Error ucs_error(const Api& api, std::string step, ucs_status_t status, ErrorKind kind = ErrorKind::driver);
#else
struct Api;
/// This build has no UCX headers: always no_driver "UCX not built in".
Result<const Api*> load();
#endif

/// The enum name of a ucs_status_t value ("UCS_OK", "UCS_ERR_UNREACHABLE"),
/// or "UCS status N" for a number 1.13's headers do not name.
std::string status_name(long status);

}  // namespace extmem::ucx
