#include <algorithm>

#include "extmem/memtools/fds.h"

namespace extmem::memtools {

void FdTimeline::close(int fd, const Open& o) {
  (void)fd;
  PathHistory& h = transient_[o.path];
  ++h.closes;
  h.last_seen = std::max(h.last_seen, o.last);
  const double life = o.last - o.first;
  // An instance open from the start has no known beginning: it says nothing about lifetimes.
  if (o.from_start) return;
  if (h.shortest_samples == 0 || life < h.shortest) {
    h.shortest = life;
    h.shortest_samples = o.seen;
  }
  h.longest = std::max(h.longest, life);
}

void FdTimeline::observe(double t, const std::vector<FdEntry>& entries) {
  const bool first = samples_ == 0;
  ++samples_;
  std::map<int, const FdEntry*> now;
  for (const FdEntry& e : entries) now[e.fd] = &e;
  // Gone, or the fd number now names another file: the old instance closed.
  for (auto it = open_.begin(); it != open_.end();) {
    auto n = now.find(it->first);
    if (n == now.end() || n->second->path != it->second.path) {
      close(it->first, it->second);
      it = open_.erase(it);
    } else {
      it->second.last = t;
      ++it->second.seen;
      ++it;
    }
  }
  for (const auto& [fd, e] : now) {
    if (open_.count(fd) > 0) continue;
    Open o{e->path, t, t, 1, first};
    open_.emplace(fd, o);
    if (first) continue;  // already open when sampling began: not an open we saw
    PathHistory& h = transient_[e->path];
    if (h.opens == 0 && h.closes == 0) h.first_seen = t;
    ++h.opens;
    h.fds.insert(fd);
  }
  for (const auto& [fd, o] : open_) {
    auto it = transient_.find(o.path);
    if (it != transient_.end()) it->second.last_seen = t;
  }
}

std::map<int, std::string> FdTimeline::persistent() const {
  std::map<int, std::string> out;
  for (const auto& [fd, o] : open_)
    if (o.from_start && o.seen == samples_) out.emplace(fd, o.path);
  return out;
}

}  // namespace extmem::memtools
