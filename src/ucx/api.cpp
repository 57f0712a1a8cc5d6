#include "ucx/api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <optional>

#include <fmt/format.h>

namespace extmem::ucx {

std::string library_name() {
  const char* over = std::getenv("EXTMEM_UCX_LIBRARY");
  return over != nullptr && over[0] != '\0' ? over : "libucp.so.0";
}

std::string status_name(long status) {
  switch (status) {
    case 0: return "UCS_OK";
    case 1: return "UCS_INPROGRESS";
    case -1: return "UCS_ERR_NO_MESSAGE";
    case -2: return "UCS_ERR_NO_RESOURCE";
    case -3: return "UCS_ERR_IO_ERROR";
    case -4: return "UCS_ERR_NO_MEMORY";
    case -5: return "UCS_ERR_INVALID_PARAM";
    case -6: return "UCS_ERR_UNREACHABLE";
    case -7: return "UCS_ERR_INVALID_ADDR";
    case -8: return "UCS_ERR_NOT_IMPLEMENTED";
    case -9: return "UCS_ERR_MESSAGE_TRUNCATED";
    case -10: return "UCS_ERR_NO_PROGRESS";
    case -11: return "UCS_ERR_BUFFER_TOO_SMALL";
    case -12: return "UCS_ERR_NO_ELEM";
    case -13: return "UCS_ERR_SOME_CONNECTS_FAILED";
    case -14: return "UCS_ERR_NO_DEVICE";
    case -15: return "UCS_ERR_BUSY";
    case -16: return "UCS_ERR_CANCELED";
    case -17: return "UCS_ERR_SHMEM_SEGMENT";
    case -18: return "UCS_ERR_ALREADY_EXISTS";
    case -19: return "UCS_ERR_OUT_OF_RANGE";
    case -20: return "UCS_ERR_TIMED_OUT";
    case -21: return "UCS_ERR_EXCEEDS_LIMIT";
    case -22: return "UCS_ERR_UNSUPPORTED";
    case -23: return "UCS_ERR_REJECTED";
    case -24: return "UCS_ERR_NOT_CONNECTED";
    case -25: return "UCS_ERR_CONNECTION_RESET";
    case -80: return "UCS_ERR_ENDPOINT_TIMEOUT";
    default: return fmt::format("UCS status {}", status);
  }
}

#ifdef EXTMEM_HAVE_UCX_HEADERS

namespace {

Result<const Api*> open_api() {
  const std::string name = library_name();
  ::dlerror();
  // RTLD_LOCAL: UCX's own modules (libuct_*.so) find libucs/libuct by their
  // sonames. Never closed: see load().
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Error{"dlopen(" + name + ")", ErrorKind::no_driver, "no UCX", why != nullptr ? why : ""};
  }
  static Api api{};
  std::string missing, first;
  auto resolve = [&](auto& slot, const char* sym) {
    void* p = ::dlsym(handle, sym);  // also searches the library's dependencies (libucs.so.0)
    if (p == nullptr) {
      if (first.empty()) first = sym;
      missing += (missing.empty() ? "" : ", ") + std::string(sym);
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
  };
#define EXTMEM_UCX_RESOLVE(fn) resolve(api.fn, #fn)
  EXTMEM_UCX_RESOLVE(ucs_status_string);
  EXTMEM_UCX_RESOLVE(ucp_get_version_string);
  EXTMEM_UCX_RESOLVE(ucp_config_read);
  EXTMEM_UCX_RESOLVE(ucp_config_modify);
  EXTMEM_UCX_RESOLVE(ucp_config_release);
  EXTMEM_UCX_RESOLVE(ucp_init_version);
  EXTMEM_UCX_RESOLVE(ucp_cleanup);
  EXTMEM_UCX_RESOLVE(ucp_context_print_info);
  EXTMEM_UCX_RESOLVE(ucp_worker_create);
  EXTMEM_UCX_RESOLVE(ucp_worker_destroy);
  EXTMEM_UCX_RESOLVE(ucp_worker_get_address);
  EXTMEM_UCX_RESOLVE(ucp_worker_release_address);
  EXTMEM_UCX_RESOLVE(ucp_worker_progress);
  EXTMEM_UCX_RESOLVE(ucp_mem_map);
  EXTMEM_UCX_RESOLVE(ucp_mem_unmap);
  EXTMEM_UCX_RESOLVE(ucp_mem_query);
  EXTMEM_UCX_RESOLVE(ucp_rkey_pack);
  EXTMEM_UCX_RESOLVE(ucp_rkey_buffer_release);
  EXTMEM_UCX_RESOLVE(ucp_ep_create);
  EXTMEM_UCX_RESOLVE(ucp_ep_close_nbx);
  EXTMEM_UCX_RESOLVE(ucp_ep_print_info);
  EXTMEM_UCX_RESOLVE(ucp_ep_flush_nbx);
  EXTMEM_UCX_RESOLVE(ucp_ep_rkey_unpack);
  EXTMEM_UCX_RESOLVE(ucp_rkey_ptr);
  EXTMEM_UCX_RESOLVE(ucp_rkey_destroy);
  EXTMEM_UCX_RESOLVE(ucp_put_nbx);
  EXTMEM_UCX_RESOLVE(ucp_get_nbx);
  EXTMEM_UCX_RESOLVE(ucp_request_check_status);
  EXTMEM_UCX_RESOLVE(ucp_request_free);
#undef EXTMEM_UCX_RESOLVE
  if (!missing.empty())
    return Error{"dlsym(" + first + ")", ErrorKind::unsupported, "missing symbol", name + " lacks " + missing};
  return &api;
}

}  // namespace

Result<const Api*> load() {
  // Loaded once and never unloaded: UCX keeps global state (its module
  // registry, the async thread's context) past ucp_cleanup().
  static const Result<const Api*> api = open_api();
  return api;
}

Error ucs_error(const Api& api, std::string step, ucs_status_t status, ErrorKind kind) {
  return coded_error(std::move(step), kind, CodeSpace::ucs_status, status, status_name(status),
                     api.ucs_status_string(status));
}

#else

Result<const Api*> load() {
  return Error{"load UCX", ErrorKind::no_driver, "no UCX",
               "this build has no UCX headers (libucx-dev was not installed when it was built)"};
}

#endif

}  // namespace extmem::ucx
