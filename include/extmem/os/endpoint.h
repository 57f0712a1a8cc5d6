// Where `extmem probe serve` listens and `extmem probe --peer` connects
// (docs/serve.md): a Unix SOCK_SEQPACKET socket named by a filesystem path
// (what two containers share through a mounted directory) or by an abstract
// name ("@NAME": one network namespace only), or a TCP port ("tcp:HOST:PORT":
// bytes only, never fds; what two network namespaces reach each other by). The
// frames on it are os/ipc.h's, on TCP in its stream form.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "extmem/core/error.h"
#include "extmem/os/ipc.h"

namespace extmem::os {

struct Endpoint {
  enum class Kind {
    path,      ///< a socket file at `name`
    abstract,  ///< Linux's abstract namespace: `name` without the '@'
    tcp,       ///< `name` is the host (an IPv4 or IPv6 address or a host name), `port` the TCP port
  };
  Kind kind = Kind::path;
  std::string name;
  std::uint16_t port = 0;  ///< tcp: 0 when listening lets the kernel choose one
  /// As written on the command line: the path, "@" + name, or "tcp:HOST:PORT"
  /// (an IPv6 address in brackets).
  std::string text() const;
  /// Whether fds can cross it (SCM_RIGHTS): not over TCP.
  bool carries_fds() const noexcept { return kind != Kind::tcp; }
};

/// The most bytes of a path or abstract name (sockaddr_un's sun_path, less its terminator).
inline constexpr std::size_t kMaxEndpointName = 107;

/// Reads an endpoint: "@NAME" (1..kMaxEndpointName bytes after '@'), a path
/// (1..kMaxEndpointName bytes), or "tcp:HOST:PORT" (HOST an IPv4 address, an IPv6
/// address in brackets or a host name of at most 253 bytes; PORT 0 to 65535). Nothing is resolved
/// here. Errors: invalid_argument, step "endpoint", detail what was wrong and what is accepted.
Result<Endpoint> parse_endpoint(std::string_view text);

/// Who is at the other end of a connection. Unix sockets: as the kernel recorded
/// it when the connection was made (SO_PEERCRED), in the reader's PID and user
/// namespaces. TCP: the socket's owner from /proc/net/tcp or tcp6 of the reader's network
/// namespace, which lists both ends only when the peer is in it; pid and gid are unknown.
struct PeerCredentials {
  pid_t pid = 0;  ///< 0 when the peer's process is not visible in our PID namespace (always on TCP)
  uid_t uid = 0;
  gid_t gid = 0;
  /// False when nothing names the peer's user: a TCP peer on another host or in
  /// another network namespace. uid and gid are then 0 and mean nothing.
  bool identified = true;
  std::string address;  ///< TCP: the peer's "ADDRESS:PORT"; empty on a Unix socket
};

/// SO_PEERCRED of the connected socket `fd`. Errors: os_error("getsockopt(SO_PEERCRED)").
Result<PeerCredentials> peer_credentials(int fd);

/// A listening endpoint, owned: closes the socket and removes the socket file
/// it created when destroyed.
class Listener {
 public:
  /// Binds and listens. A path endpoint's socket file is created with mode 0600
  /// (the umask cannot widen it), or 0660 with group `group` when given; a file
  /// already at the path is refused unless it is a socket nobody listens on
  /// (left by a server that died), which is replaced. A tcp endpoint's host must
  /// resolve to a loopback address (127.0.0.0/8, ::1) unless `any_address`; its
  /// port 0 lets the kernel choose, and endpoint() then names the port chosen.
  /// Errors: os_error("socket" | "bind" | "listen" | "chown" | "chmod" |
  /// "getsockname"), EADDRINUSE when a server already listens there or the path is
  /// not a socket; invalid_argument (step "endpoint") for a host that does not
  /// resolve, or resolves to a non-loopback address without `any_address`.
  static Result<Listener> listen(const Endpoint& endpoint, std::optional<gid_t> group = std::nullopt,
                                 bool any_address = false);

  /// Waits at most `timeout_ms` (-1: forever) for a connection (TCP: with
  /// TCP_NODELAY, as the frames are small and answered). Errors: timeout;
  /// os_error("poll" | "accept4"); os_error("getsockopt(SO_PEERCRED)").
  Result<std::pair<Channel, PeerCredentials>> accept(int timeout_ms) const;

  int fd() const noexcept { return fd_.get(); }
  const Endpoint& endpoint() const noexcept { return endpoint_; }

  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) noexcept;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener();

 private:
  Listener() = default;
  static Result<Listener> listen_tcp(const Endpoint& endpoint, bool any_address);
  UniqueFd fd_;
  Endpoint endpoint_;
  bool owns_file_ = false;
};

/// Connects to a listening endpoint. Errors: os_error("socket" | "connect") with
/// the errno verbatim (ENOENT: no socket file; ECONNREFUSED: nobody listens;
/// EACCES: the socket file's mode refuses us); invalid_argument (step
/// "endpoint") for a tcp host that does not resolve (getaddrinfo's words).
Result<Channel> connect_endpoint(const Endpoint& endpoint);

}  // namespace extmem::os
