#include "ucx/ucx.h"

#include <cstdio>
#include <cstdlib>

#include "ucx/api.h"

namespace extmem::ucx {

#ifdef EXTMEM_HAVE_UCX_HEADERS

namespace {

const Api& api_of(const void* p) { return *static_cast<const Api*>(p); }

/// What a UCX print function wrote to a FILE, as text.
template <class Print>
std::string printed(Print&& print) {
  char* text = nullptr;
  std::size_t length = 0;
  FILE* f = ::open_memstream(&text, &length);
  if (f == nullptr) return "(open_memstream failed)";
  print(f);
  std::fclose(f);
  std::string out(text != nullptr ? text : "", length);
  std::free(text);
  return out;
}

}  // namespace

Result<std::string> version() {
  auto api = load();
  if (!api) return api.error();
  return std::string((*api)->ucp_get_version_string());
}

Result<std::unique_ptr<Worker>> Worker::open(const ContextOptions& options) {
  auto loaded = load();
  if (!loaded) return loaded.error();
  const Api& api = **loaded;
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = api.ucp_config_read(nullptr, nullptr, &config); s != UCS_OK)
    return ucs_error(api, "ucp_config_read", s);
  if (!options.tls.empty()) {
    if (ucs_status_t s = api.ucp_config_modify(config, "TLS", options.tls.c_str()); s != UCS_OK) {
      api.ucp_config_release(config);
      return ucs_error(api, "ucp_config_modify(TLS=" + options.tls + ")", s);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA;
  params.mt_workers_shared = 1;
  std::unique_ptr<Worker> w(new Worker);
  w->api_ = &api;
  ucp_context_h context = nullptr;
  ucs_status_t s = api.ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context);
  api.ucp_config_release(config);
  if (s != UCS_OK) return ucs_error(api, "ucp_init", s);
  w->context_ = context;
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  ucp_worker_h worker = nullptr;
  if (s = api.ucp_worker_create(context, &wp, &worker); s != UCS_OK) return ucs_error(api, "ucp_worker_create", s);
  w->worker_ = worker;
  return w;
}

Worker::~Worker() {
  const Api& api = api_of(api_);
  if (worker_ != nullptr) api.ucp_worker_destroy(static_cast<ucp_worker_h>(worker_));
  if (context_ != nullptr) api.ucp_cleanup(static_cast<ucp_context_h>(context_));
}

std::string Worker::context_info() const {
  return printed([&](FILE* f) { api_of(api_).ucp_context_print_info(static_cast<ucp_context_h>(context_), f); });
}

Result<std::vector<std::byte>> Worker::address() const {
  const Api& api = api_of(api_);
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  if (ucs_status_t s = api.ucp_worker_get_address(static_cast<ucp_worker_h>(worker_), &address, &length); s != UCS_OK)
    return ucs_error(api, "ucp_worker_get_address", s);
  const auto* b = reinterpret_cast<const std::byte*>(address);
  std::vector<std::byte> out(b, b + length);
  api.ucp_worker_release_address(static_cast<ucp_worker_h>(worker_), address);
  return out;
}

unsigned Worker::progress() { return api_of(api_).ucp_worker_progress(static_cast<ucp_worker_h>(worker_)); }

Result<std::unique_ptr<Memory>> Worker::allocate(std::size_t bytes) {
  const Api& api = api_of(api_);
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.address = nullptr;
  params.length = bytes;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = api.ucp_mem_map(static_cast<ucp_context_h>(context_), &params, &memh); s != UCS_OK)
    return ucs_error(api, "ucp_mem_map(ALLOCATE)", s);
  std::unique_ptr<Memory> m(new Memory);
  m->worker_ = this;
  m->memh_ = memh;
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  if (ucs_status_t s = api.ucp_mem_query(memh, &attr); s != UCS_OK) return ucs_error(api, "ucp_mem_query", s);
  m->base_ = attr.address;
  m->size_ = attr.length;
  return m;
}

Result<std::unique_ptr<Endpoint>> Worker::connect(std::span<const std::byte> address) {
  const Api& api = api_of(api_);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  ucp_ep_h ep = nullptr;
  if (ucs_status_t s = api.ucp_ep_create(static_cast<ucp_worker_h>(worker_), &params, &ep); s != UCS_OK)
    return ucs_error(api, "ucp_ep_create", s);
  std::unique_ptr<Endpoint> e(new Endpoint);
  e->worker_ = this;
  e->ep_ = ep;
  return e;
}

Memory::~Memory() {
  if (memh_ != nullptr)
    api_of(worker_->api_).ucp_mem_unmap(static_cast<ucp_context_h>(worker_->context_), static_cast<ucp_mem_h>(memh_));
}

Result<std::vector<std::byte>> Memory::pack_rkey() const {
  const Api& api = api_of(worker_->api_);
  void* packed = nullptr;
  std::size_t length = 0;
  if (ucs_status_t s = api.ucp_rkey_pack(static_cast<ucp_context_h>(worker_->context_), static_cast<ucp_mem_h>(memh_),
                                         &packed, &length);
      s != UCS_OK)
    return ucs_error(api, "ucp_rkey_pack", s);
  const auto* b = static_cast<const std::byte*>(packed);
  std::vector<std::byte> out(b, b + length);
  api.ucp_rkey_buffer_release(packed);
  return out;
}

RemoteKey::~RemoteKey() {
  if (rkey_ != nullptr) api_of(worker_->api_).ucp_rkey_destroy(static_cast<ucp_rkey_h>(rkey_));
}

Result<std::byte*> RemoteKey::pointer(std::uint64_t remote_address) const {
  const Api& api = api_of(worker_->api_);
  void* p = nullptr;
  ucs_status_t s = api.ucp_rkey_ptr(static_cast<ucp_rkey_h>(rkey_), remote_address, &p);
  if (s == UCS_ERR_UNREACHABLE) return ucs_error(api, "ucp_rkey_ptr", s, ErrorKind::unsupported);
  if (s != UCS_OK) return ucs_error(api, "ucp_rkey_ptr", s);
  return static_cast<std::byte*>(p);
}

Endpoint::~Endpoint() {
  if (ep_ == nullptr) return;
  const Api& api = api_of(worker_->api_);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  (void)wait(api.ucp_ep_close_nbx(static_cast<ucp_ep_h>(ep_), &param), "ucp_ep_close_nbx");
}

Result<std::unique_ptr<RemoteKey>> Endpoint::unpack(std::span<const std::byte> packed) {
  const Api& api = api_of(worker_->api_);
  ucp_rkey_h rkey = nullptr;
  if (ucs_status_t s = api.ucp_ep_rkey_unpack(static_cast<ucp_ep_h>(ep_), packed.data(), &rkey); s != UCS_OK)
    return ucs_error(api, "ucp_ep_rkey_unpack", s);
  std::unique_ptr<RemoteKey> k(new RemoteKey);
  k->worker_ = worker_;
  k->rkey_ = rkey;
  return k;
}

Status Endpoint::wait(void* request, const char* step) {
  const Api& api = api_of(worker_->api_);
  if (request == nullptr) return {};
  if (UCS_PTR_IS_ERR(request)) return ucs_error(api, step, UCS_PTR_STATUS(request));
  const auto deadline = std::chrono::steady_clock::now() + kRequestDeadline;
  ucs_status_t s = UCS_INPROGRESS;
  while ((s = api.ucp_request_check_status(request)) == UCS_INPROGRESS) {
    if (std::chrono::steady_clock::now() > deadline) {
      // Left in flight: freeing it only marks it for release when it completes.
      api.ucp_request_free(request);
      return Error{step, ErrorKind::timeout, "timeout",
                   "no completion within " + std::to_string(kRequestDeadline.count()) + " s"};
    }
    worker_->progress();
  }
  api.ucp_request_free(request);
  if (s != UCS_OK) return ucs_error(api, step, s);
  return {};
}

Status Endpoint::put(std::span<const std::byte> local, std::uint64_t remote_address, const RemoteKey& key) {
  const Api& api = api_of(worker_->api_);
  ucp_request_param_t param{};
  auto* ep = static_cast<ucp_ep_h>(ep_);
  if (Status st = wait(api.ucp_put_nbx(ep, local.data(), local.size(), remote_address,
                                       static_cast<ucp_rkey_h>(key.rkey_), &param),
                       "ucp_put_nbx");
      !st)
    return st;
  return wait(api.ucp_ep_flush_nbx(ep, &param), "ucp_ep_flush_nbx");
}

Status Endpoint::get(std::span<std::byte> local, std::uint64_t remote_address, const RemoteKey& key) {
  const Api& api = api_of(worker_->api_);
  ucp_request_param_t param{};
  return wait(api.ucp_get_nbx(static_cast<ucp_ep_h>(ep_), local.data(), local.size(), remote_address,
                              static_cast<ucp_rkey_h>(key.rkey_), &param),
              "ucp_get_nbx");
}

std::string Endpoint::info() const {
  return printed([&](FILE* f) { api_of(worker_->api_).ucp_ep_print_info(static_cast<ucp_ep_h>(ep_), f); });
}

#else  // no UCX headers: every entry point says so

Result<std::string> version() { return load().error(); }
Result<std::unique_ptr<Worker>> Worker::open(const ContextOptions&) { return load().error(); }
Worker::~Worker() = default;
std::string Worker::context_info() const { return {}; }
Result<std::vector<std::byte>> Worker::address() const { return load().error(); }
unsigned Worker::progress() { return 0; }
Result<std::unique_ptr<Memory>> Worker::allocate(std::size_t) { return load().error(); }
Result<std::unique_ptr<Endpoint>> Worker::connect(std::span<const std::byte>) { return load().error(); }
Memory::~Memory() = default;
Result<std::vector<std::byte>> Memory::pack_rkey() const { return load().error(); }
RemoteKey::~RemoteKey() = default;
Result<std::byte*> RemoteKey::pointer(std::uint64_t) const { return load().error(); }
Endpoint::~Endpoint() = default;
Result<std::unique_ptr<RemoteKey>> Endpoint::unpack(std::span<const std::byte>) { return load().error(); }
Status Endpoint::wait(void*, const char*) { return load().error(); }
Status Endpoint::put(std::span<const std::byte>, std::uint64_t, const RemoteKey&) { return load().error(); }
Status Endpoint::get(std::span<std::byte>, std::uint64_t, const RemoteKey&) { return load().error(); }
std::string Endpoint::info() const { return {}; }

#endif

}  // namespace extmem::ucx
