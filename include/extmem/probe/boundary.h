// The boundary between the two sides of `extmem probe --peer` and `extmem probe
// serve` (docs/serve.md): each side's run context as it reads it itself, and the
// facts that differ. A row whose mechanism a boundary removes names the fact.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace extmem::probe {

/// One side's view of where it runs.
struct SideContext {
  std::uint32_t uid = 0, gid = 0;  ///< real ids, in that side's user namespace
  std::int64_t pid = 0;            ///< in that side's PID namespace
  /// Namespace of each kind, from readlink(/proc/self/ns/KIND) ("pid:[4026531836]"),
  /// for cgroup, ipc, mnt, net, pid, user, uts; sorted by kind; a kind the kernel
  /// does not show is absent.
  std::vector<std::pair<std::string, std::string>> namespaces;
  std::string cgroup;          ///< /proc/self/cgroup, its lines joined by ';'
  std::string security_label;  ///< /proc/self/attr/current (SELinux or AppArmor), or "none"
  /// "DEV:INODE" of /dev/shm (stat, st_dev as major:minor hex), or "absent".
  std::string dev_shm;
  std::string hostname;  ///< uname nodename (the UTS namespace's)
  bool operator==(const SideContext&) const = default;
};

/// This process's context. Never fails: what cannot be read is left empty or "absent".
SideContext read_side_context();

/// One way the peer's context differs from ours.
struct BoundaryFact {
  std::string fact;  ///< stable name: "uid", "gid", "ns:pid", "ns:ipc", ..., "cgroup", "security_label", "dev_shm", "hostname"
  std::string text;  ///< for people: "peer in another PID namespace", "peer's /dev/shm is another filesystem", ...
  bool operator==(const BoundaryFact&) const = default;
};

/// The facts that differ between `here` and `peer`, in the order of the fields above.
std::vector<BoundaryFact> compare_sides(const SideContext& here, const SideContext& peer);

/// Whether `facts` holds the fact named `fact`.
bool differs(const std::vector<BoundaryFact>& facts, const std::string& fact);

/// What the driving side learned of its peer (Findings::peer).
struct PeerFinding {
  std::string endpoint;    ///< as given to --peer
  std::string run_id;      ///< shared by both sides' documents (16 hex digits)
  std::string peer_build;  ///< the serving side's extmem version
  std::string served_role; ///< the halves the serving side ran: "server" or "client"
  SideContext here, peer;
  std::vector<BoundaryFact> boundary;  ///< compare_sides(here, peer)
};

}  // namespace extmem::probe
