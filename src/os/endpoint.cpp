#include "extmem/os/endpoint.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace extmem::os {
namespace {

Error endpoint_usage(std::string detail) {
  return Error{"endpoint", ErrorKind::invalid_argument, {},
               std::move(detail) + "; accepted: a socket path or @NAME (an abstract socket), each 1 to " +
                   std::to_string(kMaxEndpointName) + " bytes, or tcp:HOST:PORT"};
}

// The endpoint's text is not repeated: every caller quotes it before this detail.
Error tcp_usage(std::string what) {
  return Error{"endpoint", ErrorKind::invalid_argument, {},
               what + "; accepted: tcp:HOST:PORT, HOST an IPv4 address, [IPv6 address] or host name, PORT 0 to 65535"};
}

// "HOST:PORT", what follows "tcp:".
Result<Endpoint> parse_tcp(std::string_view rest) {
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return tcp_usage("no port");
  std::string_view host = rest.substr(0, colon);
  const std::string_view port = rest.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || port.size() > 5 || ec != std::errc() || end != port.data() + port.size() || value > 65535)
    return tcp_usage(fmt::format("port \"{}\" is not a number from 0 to 65535", port));
  Endpoint e;
  e.kind = Endpoint::Kind::tcp;
  e.port = static_cast<std::uint16_t>(value);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    e.name = std::string(host.substr(1, host.size() - 2));
    in6_addr a6{};
    if (::inet_pton(AF_INET6, e.name.c_str(), &a6) != 1) return tcp_usage("the bracketed host is not an IPv6 address");
    return e;
  }
  if (host.empty() || host.size() > 253) return tcp_usage("the host is empty or over 253 bytes");
  if (host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != std::string_view::npos)
    return tcp_usage("the host holds a byte a host name or IPv4 address does not (an IPv6 address goes in brackets)");
  e.name = std::string(host);
  return e;
}

// The addresses a tcp endpoint's host names, in getaddrinfo's order; `passive` to bind.
Result<std::vector<sockaddr_storage>> resolve(const Endpoint& e, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(e.name.c_str(), std::to_string(e.port).c_str(), &hints, &found);
  if (rc != 0)
    return Error{"endpoint", ErrorKind::invalid_argument, {},
                 fmt::format("{}: host \"{}\" does not resolve: {}", e.text(), e.name, ::gai_strerror(rc))};
  std::vector<sockaddr_storage> out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    sockaddr_storage s{};
    std::memcpy(&s, a->ai_addr, std::min<std::size_t>(a->ai_addrlen, sizeof s));
    out.push_back(s);
  }
  ::freeaddrinfo(found);
  return out;
}

socklen_t length_of(const sockaddr_storage& a) {
  return a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool is_loopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr) >> 24) == 127;
  const in6_addr& v6 = reinterpret_cast<const sockaddr_in6&>(a).sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

// "ADDRESS:PORT" as people write it.
std::string address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(v4.sin_port));
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
  ::inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf);
  return fmt::format("[{}]:{}", buf, ntohs(v6.sin6_port));
}

// The address as /proc/net/tcp and tcp6 print it: each 32-bit word of the
// address as the kernel holds it, in hex, then the port.
std::string proc_net_text(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    return fmt::format("{:08X}:{:04X}", v4.sin_addr.s_addr, ntohs(v4.sin_port));
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
  std::uint32_t w[4];
  std::memcpy(w, &v6.sin6_addr, sizeof w);
  return fmt::format("{:08X}{:08X}{:08X}{:08X}:{:04X}", w[0], w[1], w[2], w[3], ntohs(v6.sin6_port));
}

// Who owns the socket at the other end of `conn`: the line of /proc/net/tcp(6)
// whose local address is the peer's and remote address ours. Only a peer in this
// network namespace has one.
PeerCredentials tcp_peer(int conn) {
  PeerCredentials c;
  c.identified = false;
  sockaddr_storage here{}, there{};
  socklen_t here_len = sizeof here, there_len = sizeof there;
  if (::getsockname(conn, reinterpret_cast<sockaddr*>(&here), &here_len) != 0 ||
      ::getpeername(conn, reinterpret_cast<sockaddr*>(&there), &there_len) != 0)
    return c;
  c.address = address_text(there);
  const std::string local = proc_net_text(there), remote = proc_net_text(here);
  std::ifstream table(there.ss_family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp");
  std::string sl, l, r, state, queues, timer, retransmits;
  unsigned long uid = 0;
  std::string line;
  while (std::getline(table, line)) {
    std::istringstream in(line);
    if (!(in >> sl >> l >> r >> state >> queues >> timer >> retransmits >> uid)) continue;
    if (l == local && r == remote) {
      c.uid = static_cast<uid_t>(uid);
      c.identified = true;
      break;
    }
  }
  return c;
}

void no_delay(int fd) {
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // a frame waits for no more
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

std::string Endpoint::text() const {
  switch (kind) {
    case Kind::abstract: return "@" + name;
    case Kind::tcp:
      if (name.find(':') != std::string::npos) return fmt::format("tcp:[{}]:{}", name, port);  // IPv6
      return fmt::format("tcp:{}:{}", name, port);
    case Kind::path: break;
  }
  return name;
}

Result<Endpoint> parse_endpoint(std::string_view text) {
  if (text.rfind("tcp:", 0) == 0) return parse_tcp(text.substr(4));
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

Result<Listener> Listener::listen_tcp(const Endpoint& endpoint, bool any_address) {
  auto addresses = resolve(endpoint, true);
  if (!addresses) return std::move(addresses).error();
  const sockaddr_storage& a = addresses->front();
  if (!any_address && !is_loopback(a))
    return Error{"endpoint", ErrorKind::invalid_argument, {},
                 fmt::format("{} is {}, not a loopback address: a tcp: endpoint listens on 127.0.0.1, ::1 or localhost "
                             "unless --listen-any lets peers of other hosts and network namespaces in",
                             endpoint.text(), address_text(a))};
  UniqueFd fd(::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return os_error("socket", errno);
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // a restart within TIME_WAIT binds
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), length_of(a)) != 0)
    return os_error("bind", errno, endpoint.text());
  if (::listen(fd.get(), 4) != 0) return os_error("listen", errno, endpoint.text());
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) return os_error("getsockname", errno);
  Listener l;
  l.endpoint_ = endpoint;
  l.endpoint_.port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(bound).sin6_port
                                                       : reinterpret_cast<const sockaddr_in&>(bound).sin_port);
  l.fd_ = std::move(fd);
  return l;
}

Result<Listener> Listener::listen(const Endpoint& endpoint, std::optional<gid_t> group, bool any_address) {
  if (endpoint.kind == Endpoint::Kind::tcp) return listen_tcp(endpoint, any_address);
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
  if (endpoint_.kind == Endpoint::Kind::tcp) {
    no_delay(conn.get());
    PeerCredentials who = tcp_peer(conn.get());
    return std::pair<Channel, PeerCredentials>{Channel(std::move(conn)), std::move(who)};
  }
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
  if (endpoint.kind == Endpoint::Kind::tcp) {
    auto addresses = resolve(endpoint, false);
    if (!addresses) return std::move(addresses).error();
    int err = 0;
    for (const sockaddr_storage& a : *addresses) {
      UniqueFd fd(::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!fd.valid()) return os_error("socket", errno);
      if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), length_of(a)) == 0) {
        no_delay(fd.get());
        return Channel(std::move(fd));
      }
      err = errno;  // the next address may answer; the last refusal is the one told
    }
    return os_error("connect", err, endpoint.text());
  }
  auto fd = seqpacket_socket();
  if (!fd) return std::move(fd).error();
  auto [addr, len] = address_of(endpoint);
  if (::connect(fd->get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0)
    return os_error("connect", errno, endpoint.text());
  return Channel(std::move(*fd));
}

}  // namespace extmem::os
