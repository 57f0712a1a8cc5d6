#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "extmem/probe/boundary.h"

namespace extmem::probe {
namespace {

// The namespace kinds a boundary is made of; "time" and "cgroup" too where shown.
constexpr const char* kNamespaceKinds[] = {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"};

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\0' || line.back() == '\n')) line.pop_back();
  return line;
}

// What each namespace's difference means for sharing, in the words a row's why uses.
std::string namespace_text(const std::string& kind) {
  if (kind == "pid") return "peer in another PID namespace (its pids mean nothing here: pidfd_open, /proc/PID)";
  if (kind == "ipc") return "peer in another IPC namespace (System V shared memory and POSIX queues are not shared)";
  if (kind == "mnt") return "peer in another mount namespace";
  if (kind == "net") return "peer in another network namespace (abstract sockets are not shared)";
  if (kind == "user") return "peer in another user namespace (its uids map differently; ptrace checks see no relation)";
  if (kind == "uts") return "peer in another UTS namespace";
  if (kind == "cgroup") return "peer in another cgroup namespace";
  return "peer in another " + kind + " namespace";
}

}  // namespace

SideContext read_side_context() {
  SideContext c;
  c.uid = ::getuid();
  c.gid = ::getgid();
  c.pid = ::getpid();
  for (const char* kind : kNamespaceKinds) {
    char target[256];
    const std::string link = std::string("/proc/self/ns/") + kind;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0) c.namespaces.emplace_back(kind, std::string(target, static_cast<std::size_t>(n)));
  }
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);) c.cgroup += (c.cgroup.empty() ? "" : ";") + line;
  c.security_label = first_line_of("/proc/self/attr/current");
  if (c.security_label.empty()) c.security_label = "none";
  struct stat st {};
  c.dev_shm = ::stat("/dev/shm", &st) == 0
                  ? fmt::format("{:x}:{:x}:{}", major(st.st_dev), minor(st.st_dev), st.st_ino)
                  : std::string("absent");
  utsname u{};
  if (::uname(&u) == 0) c.hostname = u.nodename;
  return c;
}

std::vector<BoundaryFact> compare_sides(const SideContext& here, const SideContext& peer) {
  std::vector<BoundaryFact> out;
  if (here.uid != peer.uid) out.push_back({"uid", fmt::format("peer runs as uid {} (here {})", peer.uid, here.uid)});
  if (here.gid != peer.gid) out.push_back({"gid", fmt::format("peer runs as gid {} (here {})", peer.gid, here.gid)});
  for (const auto& ns : here.namespaces) {
    auto it = std::find_if(peer.namespaces.begin(), peer.namespaces.end(), [&](const auto& p) { return p.first == ns.first; });
    if (it != peer.namespaces.end() && it->second != ns.second) out.push_back({"ns:" + ns.first, namespace_text(ns.first)});
  }
  if (here.cgroup != peer.cgroup) out.push_back({"cgroup", "peer in another cgroup"});
  if (here.security_label != peer.security_label)
    out.push_back({"security_label", fmt::format("peer's security label is {} (here {})", peer.security_label, here.security_label)});
  if (here.dev_shm != peer.dev_shm)
    out.push_back({"dev_shm", peer.dev_shm == "absent" ? "peer has no /dev/shm" : "peer's /dev/shm is another filesystem"});
  if (here.hostname != peer.hostname) out.push_back({"hostname", fmt::format("peer's hostname is {}", peer.hostname)});
  return out;
}

bool differs(const std::vector<BoundaryFact>& facts, const std::string& fact) {
  return std::any_of(facts.begin(), facts.end(), [&](const BoundaryFact& f) { return f.fact == fact; });
}

}  // namespace extmem::probe
