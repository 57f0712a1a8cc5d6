// A UCX context and worker, registered memory, remote keys and endpoints, as
// owned objects with typed errors (issue #32). Only this component sees UCX's
// headers (ucx/api.h); callers get plain types. Every call loads UCX first
// (ucx::load()), so without libucp.so.0 each returns its no_driver error.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::ucx {

/// UCX's own version string ("1.13.1"). Errors: load()'s.
Result<std::string> version();

/// How long a UCX request (put, get, flush) may take before it is given up
/// with a timeout error.
inline constexpr std::chrono::seconds kRequestDeadline{20};

class Worker;

/// Memory UCX allocated and registered (ucp_mem_map with UCP_MEM_MAP_ALLOCATE:
/// UCX picks the allocator, a shared-memory transport's segment where one is
/// enabled, so that a peer can map it). Unmapped (ucp_mem_unmap) on destruction.
class Memory {
 public:
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  /// This process's view of the memory: at least the bytes asked for.
  std::span<std::byte> bytes() const noexcept { return {static_cast<std::byte*>(base_), size_}; }
  /// The address a peer names in its remote accesses (this process's).
  std::uint64_t remote_address() const noexcept { return reinterpret_cast<std::uintptr_t>(base_); }
  /// The packed remote key (ucp_rkey_pack), the bytes a peer unpacks.
  /// Errors: driver, step "ucp_rkey_pack", the UCX status.
  Result<std::vector<std::byte>> pack_rkey() const;

 private:
  friend class Worker;
  Memory() = default;
  const Worker* worker_ = nullptr;
  void* memh_ = nullptr;
  void* base_ = nullptr;
  std::size_t size_ = 0;
};

/// An unpacked remote key of a peer's memory, for one endpoint.
class RemoteKey {
 public:
  ~RemoteKey();
  RemoteKey(const RemoteKey&) = delete;
  RemoteKey& operator=(const RemoteKey&) = delete;
  /// ucp_rkey_ptr: a pointer in this process to the peer's `remote_address`
  /// (valid while this key lives). Errors: driver (or `unsupported` where UCX
  /// says UCS_ERR_UNREACHABLE: no transport of this key maps memory), step
  /// "ucp_rkey_ptr", the UCX status verbatim.
  Result<std::byte*> pointer(std::uint64_t remote_address) const;

 private:
  friend class Endpoint;
  RemoteKey() = default;
  const Worker* worker_ = nullptr;
  void* rkey_ = nullptr;
};

/// An endpoint to a peer's worker, closed (forcibly: the peer need not take
/// part) on destruction.
class Endpoint {
 public:
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  /// ucp_ep_rkey_unpack of a peer's packed key. Errors: driver, step "ucp_ep_rkey_unpack".
  Result<std::unique_ptr<RemoteKey>> unpack(std::span<const std::byte> packed);
  /// ucp_put_nbx of `local` to the peer's `remote_address`, waited for, then
  /// ucp_ep_flush_nbx (the bytes are at the peer when it returns). Errors:
  /// driver, steps "ucp_put_nbx" / "ucp_ep_flush_nbx"; timeout after kRequestDeadline.
  Status put(std::span<const std::byte> local, std::uint64_t remote_address, const RemoteKey& key);
  /// ucp_get_nbx of `local.size()` bytes at the peer's `remote_address` into
  /// `local`, waited for. Errors: driver, step "ucp_get_nbx"; timeout.
  Status get(std::span<std::byte> local, std::uint64_t remote_address, const RemoteKey& key);
  /// ucp_ep_print_info: UCX's own description of the endpoint (its lanes,
  /// their transports and devices, the RMA protocol ranges), verbatim.
  std::string info() const;

 private:
  friend class Worker;
  Endpoint() = default;
  Status wait(void* request, const char* step);
  Worker* worker_ = nullptr;
  void* ep_ = nullptr;
};

/// Options of a context.
struct ContextOptions {
  /// Non-empty: the transports this context may use (ucp_config_modify "TLS",
  /// replacing UCX_TLS of the environment), e.g. "all". Empty: UCX's
  /// configuration as the environment gives it.
  std::string tls;
};

/// A UCX context (features RMA) and one worker of it, in multi-thread mode so
/// that one thread may progress it while another registers memory. Destroyed
/// in order (worker, then context) on destruction; every Memory, Endpoint and
/// RemoteKey made from it must be released first.
class Worker {
 public:
  /// ucp_config_read + ucp_init + ucp_worker_create. Errors: load()'s
  /// (no_driver without UCX); driver, steps "ucp_config_read",
  /// "ucp_config_modify(TLS=...)", "ucp_init", "ucp_worker_create".
  static Result<std::unique_ptr<Worker>> open(const ContextOptions& options = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// ucp_context_print_info: the context's components, memory domains and
  /// transport resources, verbatim.
  std::string context_info() const;
  /// The worker's packed address (ucp_worker_get_address). Errors: driver.
  Result<std::vector<std::byte>> address() const;
  /// ucp_worker_progress once; the number of events it handled.
  unsigned progress();
  /// Allocates and registers `bytes` bytes (Memory). Errors: driver, step
  /// "ucp_mem_map(ALLOCATE)" or "ucp_mem_query".
  Result<std::unique_ptr<Memory>> allocate(std::size_t bytes);
  /// ucp_ep_create to the worker of packed address `address`. Errors: driver, step "ucp_ep_create".
  Result<std::unique_ptr<Endpoint>> connect(std::span<const std::byte> address);

 private:
  friend class Memory;
  friend class RemoteKey;
  friend class Endpoint;
  Worker() = default;
  const void* api_ = nullptr;  ///< const Api*
  void* context_ = nullptr;
  void* worker_ = nullptr;
};

}  // namespace extmem::ucx
