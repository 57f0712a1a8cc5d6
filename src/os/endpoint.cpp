#include "extmem/os/endpoint.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace extmem::os {
namespace {

Error endpoint_usage(std::string detail) {
  return Error{"endpoint", ErrorKind::invalid_argument, {},
               std::move(detail) + "; accepted: a socket path or @NAME (an abstract socket), each 1 to " +
                   std::to_string(kMaxEndpointName) + " bytes"};
}

// sockaddr_un for `e` and the length to pass (an abstract name is counted, not terminated).
std::pair<sockaddr_un, socklen_t> address_of(const Endpoint& e) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::size_t skip = e.kind == Endpoint::Kind::abstract ? 1 : 0;  // sun_path[0] = '\0': abstract
  std::memcpy(a.sun_path + skip, e.name.data(), e.name.size());
  return {a, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + skip + e.name.size() + (skip ? 0 : 1))};
}

Result<UniqueFd> seqpacket_socket() {
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return os_error("socket", errno);
  return fd;
}

// Whether the socket file of `e` may still be someone's: only a refused connect
// (ECONNREFUSED: nobody listens) marks it stale. A socket of another type
// (EPROTOTYPE) or one we may not reach is left alone.
bool somebody_listens(const Endpoint& e) {
  auto fd = seqpacket_socket();
  if (!fd) return true;
  auto [addr, len] = address_of(e);
  return ::connect(fd->get(), reinterpret_cast<const sockaddr*>(&addr), len) == 0 || errno != ECONNREFUSED;
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view text) {
  if (text.rfind("tcp:", 0) == 0)
    return endpoint_usage(fmt::format("\"{}\" is not accepted: tcp: endpoints carry no fds and are not built yet",
                                      text));  // docs/serve.md, "Endpoints"
  Endpoint e;
  if (!text.empty() && text.front() == '@') {
    e.kind = Endpoint::Kind::abstract;
    text.remove_prefix(1);
  }
  if (text.empty()) return endpoint_usage("the name is empty");
  if (text.size() > kMaxEndpointName)
    return endpoint_usage(fmt::format("{} bytes is too long", text.size()));
  if (text.find('\0') != std::string_view::npos) return endpoint_usage("the name holds a NUL byte");
  e.name = std::string(text);
  return e;
}

Result<PeerCredentials> peer_credentials(int fd) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) return os_error("getsockopt(SO_PEERCRED)", errno);
  return PeerCredentials{c.pid, c.uid, c.gid};
}

Result<Listener> Listener::listen(const Endpoint& endpoint, std::optional<gid_t> group) {
  auto fd = seqpacket_socket();
  if (!fd) return std::move(fd).error();
  Listener l;
  l.endpoint_ = endpoint;
  auto [addr, len] = address_of(endpoint);
  if (endpoint.kind == Endpoint::Kind::path) {
    struct stat st {};
    if (::lstat(endpoint.name.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode))
        return os_error("bind", EADDRINUSE, fmt::format("{} exists and is not a socket", endpoint.name));
      if (somebody_listens(endpoint))
        return os_error("bind", EADDRINUSE, fmt::format("{} is a socket in use (or not ours to replace)", endpoint.name));
      ::unlink(endpoint.name.c_str());  // a socket left by a server that died
    }
    // The file is created 0600 whatever the umask, so no other user can connect in between.
    const mode_t old = ::umask(0177);
    const int r = ::bind(fd->get(), reinterpret_cast<const sockaddr*>(&addr), len);
    const int err = errno;
    ::umask(old);
    if (r != 0) return os_error("bind", err, endpoint.name);
    l.owns_file_ = true;
    l.fd_ = std::move(*fd);
    if (group) {
      if (::chown(endpoint.name.c_str(), static_cast<uid_t>(-1), *group) != 0)
        return os_error("chown", errno, endpoint.name);
      if (::chmod(endpoint.name.c_str(), 0660) != 0) return os_error("chmod", errno, endpoint.name);
    }
  } else {
    if (::bind(fd->get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0)
      return os_error("bind", errno, endpoint.text());
    l.fd_ = std::move(*fd);
  }
  if (::listen(l.fd_.get(), 4) != 0) return os_error("listen", errno, endpoint.text());
  return l;
}

Result<std::pair<Channel, PeerCredentials>> Listener::accept(int timeout_ms) const {
  pollfd p{fd_.get(), POLLIN, 0};
  const int r = ::poll(&p, 1, timeout_ms);
  if (r < 0) return os_error("poll", errno);
  if (r == 0) return Error{"accept", ErrorKind::timeout, {}, fmt::format("no connection within {} ms", timeout_ms)};
  UniqueFd conn(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn.valid()) return os_error("accept4", errno);
  auto cred = peer_credentials(conn.get());
  if (!cred) return std::move(cred).error();
  return std::pair<Channel, PeerCredentials>{Channel(std::move(conn)), *cred};
}

Listener::Listener(Listener&& other) noexcept
    : fd_(std::move(other.fd_)), endpoint_(std::move(other.endpoint_)), owns_file_(std::exchange(other.owns_file_, false)) {}

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    if (owns_file_) ::unlink(endpoint_.name.c_str());
    fd_ = std::move(other.fd_);
    endpoint_ = std::move(other.endpoint_);
    owns_file_ = std::exchange(other.owns_file_, false);
  }
  return *this;
}

Listener::~Listener() {
  if (owns_file_) ::unlink(endpoint_.name.c_str());
}

Result<Channel> connect_endpoint(const Endpoint& endpoint) {
  auto fd = seqpacket_socket();
  if (!fd) return std::move(fd).error();
  auto [addr, len] = address_of(endpoint);
  if (::connect(fd->get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0)
    return os_error("connect", errno, endpoint.text());
  return Channel(std::move(*fd));
}

}  // namespace extmem::os
