// Where `extmem probe serve` listens and `extmem probe --peer` connects
// (docs/serve.md): a Unix SOCK_SEQPACKET socket named by a filesystem path
// (what two containers share through a mounted directory) or by an abstract
// name ("@NAME": one network namespace only). The frames on it are os/ipc.h's.
#pragma once

#include <sys/types.h>

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
  };
  Kind kind = Kind::path;
  std::string name;
  /// As written on the command line: the path, or "@" + name.
  std::string text() const { return kind == Kind::abstract ? "@" + name : name; }
};

/// The most bytes of a path or abstract name (sockaddr_un's sun_path, less its terminator).
inline constexpr std::size_t kMaxEndpointName = 107;

/// Reads an endpoint: "@NAME" (1..kMaxEndpointName bytes after '@') or a path
/// (1..kMaxEndpointName bytes). "tcp:HOST:PORT" is recognised and refused: a TCP
/// endpoint carries no fds and is not built yet. Errors: invalid_argument, step
/// "endpoint", detail what was wrong and what is accepted.
Result<Endpoint> parse_endpoint(std::string_view text);

/// Who is at the other end of a Unix socket, as the kernel recorded it when the
/// connection was made (SO_PEERCRED), in the reader's PID and user namespaces.
struct PeerCredentials {
  pid_t pid = 0;  ///< 0 when the peer's process is not visible in our PID namespace
  uid_t uid = 0;
  gid_t gid = 0;
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
  /// (left by a server that died), which is replaced. Errors: os_error("socket" |
  /// "bind" | "listen" | "chown" | "chmod"), EADDRINUSE when a server already
  /// listens there or the path is not a socket.
  static Result<Listener> listen(const Endpoint& endpoint, std::optional<gid_t> group = std::nullopt);

  /// Waits at most `timeout_ms` (-1: forever) for a connection. Errors: timeout;
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
  UniqueFd fd_;
  Endpoint endpoint_;
  bool owns_file_ = false;
};

/// Connects to a listening endpoint. Errors: os_error("socket" | "connect") with
/// the errno verbatim (ENOENT: no socket file; ECONNREFUSED: nobody listens;
/// EACCES: the socket file's mode refuses us).
Result<Channel> connect_endpoint(const Endpoint& endpoint);

}  // namespace extmem::os
