#include "extmem/watch/sampler.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <numeric>
#include <variant>

#include <fmt/format.h>

#include "extmem/watch/mapping_classes.h"
#include "extmem/watch/procfs.h"

namespace extmem::watch {
namespace {

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Whether this kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN).
bool children_files_exist() {
  const std::string path = fmt::format("/proc/self/task/{}/children", ::gettid());
  return ::access(path.c_str(), R_OK) == 0;
}

// A process of the tree as the walk found it.
struct Found {
  ProcessDir dir;
  ProcStat stat;
};

// How the walk came to a pid: a root is followed whatever it is, a listed child
// is new to the tree, a tracked pid is followed only while it is the same process.
enum class Via { root, listing, tracked };

// What the walk starts from: the roots, then (with adopt_own_children) this
// process's own children, which is where orphans of the tree land.
std::deque<std::pair<pid_t, Via>> first_queue(const std::vector<pid_t>& roots, const SamplerOptions& options,
                                              std::unordered_map<pid_t, std::vector<pid_t>>& scanned_children,
                                              std::string& buf) {
  std::deque<std::pair<pid_t, Via>> queue;
  for (pid_t r : roots) queue.emplace_back(r, Via::root);
  if (options.adopt_own_children) {
    if (options.scan_all_processes) {
      for (pid_t c : scanned_children[::getpid()]) queue.emplace_back(c, Via::listing);
    } else if (auto self = ProcessDir::open(::getpid()); self) {
      if (auto kids = self->children(buf); kids)
        for (pid_t c : *kids) queue.emplace_back(c, Via::listing);
    }
  }
  return queue;
}

// Why open_live found nothing to sample.
enum class NotLive {
  no_dir,     // /proc/PID could not be opened: gone (or unreadable)
  no_stat,    // its stat could not be read
  bad_stat,   // its stat did not parse: the process may still be there
  exited,     // a zombie: exited, not yet reaped, nothing left to measure
};

// Opens /proc/PID and parses its stat; `note(file, error)` hears the problems
// that are not simply the process being gone.
std::variant<Found, NotLive> open_live(pid_t pid, std::string& buf, auto&& note) {
  auto dir = ProcessDir::open(pid);
  if (!dir) {
    if (!is_gone(dir.error())) note("dir", std::move(dir).error());
    return NotLive::no_dir;
  }
  if (Status r = dir->read("stat", buf); !r) {
    if (!is_gone(r.error())) note("stat", std::move(r).error());
    return NotLive::no_stat;
  }
  auto st = parse_stat(buf);
  if (!st) {
    note("stat", std::move(st).error());
    return NotLive::bad_stat;
  }
  if (st->state == 'Z' || st->state == 'X') return NotLive::exited;
  return Found{std::move(*dir), std::move(*st)};
}

// The command line with NULs as spaces, at most 256 bytes; empty when unreadable.
std::string read_cmdline(const ProcessDir& dir, std::string& buf) {
  std::string cmdline;
  if (dir.read("cmdline", buf)) {
    cmdline = buf.substr(0, 256);
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
  }
  return cmdline;
}

// Reads the figures taken every sample (status, fd count) into `s`; false when
// the process turned out to be gone or exiting (left out of this sample).
// `note(file, error)` hears the other problems.
bool read_cheap_figures(const ProcessDir& dir, ProcessSample& s, std::string& buf, auto&& note) {
  if (Status r = dir.read("status", buf); !r) {
    if (is_gone(r.error())) return false;
    note("status", std::move(r).error());
  } else if (auto ps = parse_status(buf); !ps) {
    note("status", std::move(ps).error());
  } else {
    if (!ps->vm_rss_kib) return false;  // no address space any more: the process is exiting
    s.rss_kib = ps->vm_rss_kib;
    s.hwm_kib = ps->vm_hwm_kib;
    s.anon_kib = ps->rss_anon_kib;
    s.file_kib = ps->rss_file_kib;
    s.shmem_kib = ps->rss_shmem_kib;
    s.swap_kib = ps->vm_swap_kib;
    s.threads = ps->threads;
  }
  if (auto n = dir.fd_count(); n) {
    s.fds = *n;
  } else if (is_gone(n.error())) {
    return false;
  } else {
    note("fd", std::move(n).error());
  }
  return true;
}

// Reads the budgeted figures (the maps count or census, smaps_rollup's Pss)
// into `s`; false when the process turned out to be gone (left out of this
// sample). `note(file, error)` hears the other problems.
bool read_map_figures(const ProcessDir& dir, ProcessSample& s, const SamplerOptions& options, std::string& maps_buf,
                      std::string& buf, auto&& note) {
  bool gone = false;
  if (Status r = dir.read("maps", maps_buf); !r) {
    if (is_gone(r.error())) gone = true;
    else note("maps", std::move(r).error());
  } else if (options.classes) {
    MapCensus census = census_of(maps_buf);
    if (census.total > 0) {
      s.mappings = census.total;
      s.classes = std::move(census.classes);
      s.classes_taken = true;
    }
  } else if (std::uint64_t n = count_lines(maps_buf); n > 0) {
    s.mappings = n;
  }
  if (options.pss && !gone) {
    if (Status r = dir.read("smaps_rollup", buf); !r) {
      if (is_gone(r.error())) gone = true;
      else note("smaps_rollup", std::move(r).error());
    } else if (!buf.empty()) {  // empty: the address space is gone
      if (auto pss = parse_pss_total(buf); pss) s.pss_kib = *pss;
      else note("smaps_rollup", std::move(pss).error());
    }
  }
  return !gone;
}

// The tree: roots, then breadth first through the children lists, then
// processes seen before that are no longer reached (orphans re-parented
// outside the tree) as long as they are the same process.
// `tracked` (Sampler::Tracked by pid) and `root_start` are updated as the walk
// learns which pids are still the processes they were; `note(pid, comm, file,
// error)` hears the problems.
std::vector<Found> walk_tree(const std::vector<pid_t>& roots, const SamplerOptions& options, auto& tracked,
                             std::unordered_map<pid_t, std::uint64_t>& root_start, std::string& buf, auto&& note) {
  std::vector<Found> found;
  std::unordered_set<pid_t> visited;
  std::unordered_map<pid_t, std::vector<pid_t>> scanned_children;
  if (options.scan_all_processes) {
    auto all = list_all_processes(buf);
    if (!all) note(0, std::string(), "/proc", std::move(all).error());
    else
      for (auto [pid, ppid] : *all) scanned_children[ppid].push_back(pid);
  }
  std::deque<std::pair<pid_t, Via>> queue = first_queue(roots, options, scanned_children, buf);
  std::vector<pid_t> earlier;
  for (const auto& [pid, tr] : tracked) earlier.push_back(pid);
  std::sort(earlier.begin(), earlier.end());
  std::size_t next_earlier = 0;

  for (;;) {
    if (queue.empty()) {
      while (next_earlier < earlier.size() && visited.count(earlier[next_earlier]) != 0) ++next_earlier;
      if (next_earlier == earlier.size()) break;
      queue.emplace_back(earlier[next_earlier++], Via::tracked);
    }
    const auto [pid, via] = queue.front();
    queue.pop_front();
    if (visited.count(pid) != 0) continue;
    auto live = open_live(pid, buf, [&, p = pid](const char* file, Error e) { note(p, std::string(), file, std::move(e)); });
    if (const NotLive* why = std::get_if<NotLive>(&live)) {
      if (*why == NotLive::no_stat || *why == NotLive::exited || (*why == NotLive::no_dir && via != Via::root))
        tracked.erase(pid);
      continue;
    }
    Found& f = std::get<Found>(live);
    const ProcStat& st = f.stat;
    auto it = tracked.find(pid);
    if (via == Via::root) {
      auto [rit, fresh] = root_start.try_emplace(pid, st.start_ticks);
      if (!fresh && rit->second != st.start_ticks) continue;  // the root exited and its pid was reused
    } else if (via == Via::tracked) {
      if (it == tracked.end() || it->second.start_ticks != st.start_ticks) {
        tracked.erase(pid);  // reused pid: not a descendant any more
        continue;
      }
    }
    if (it == tracked.end() || it->second.start_ticks != st.start_ticks) tracked[pid] = {st.start_ticks, -1};
    visited.insert(pid);
    std::vector<pid_t> kids;
    if (options.scan_all_processes) {
      kids = scanned_children[pid];
    } else if (auto k = f.dir.children(buf); k) {
      kids = std::move(*k);
    } else if (!is_gone(k.error())) {
      note(pid, st.comm, "task/*/children", std::move(k).error());
    }
    for (pid_t c : kids) queue.emplace_back(c, Via::listing);
    // A vfork child before its exec (posix_spawn's) runs in its parent's address
    // space: its figures would be the parent's, so it is left out until it execs.
    if ((st.flags & kPfForkNoExec) != 0 && visited.count(st.ppid) != 0 && shares_address_space(pid, st.ppid))
      continue;
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace

Sampler::Sampler(std::vector<pid_t> roots, SamplerOptions options) : options_(options) {
  for (pid_t r : roots) roots_.push_back(r);
  if (!options_.scan_all_processes && !children_files_exist()) options_.scan_all_processes = true;
}

void Sampler::note(pid_t pid, const std::string& comm, const char* file, Error e) {
  const std::string key = fmt::format("{}/{}", pid, file);
  if (!reported_.insert(key).second) return;
  all_problems_.push_back(ReadProblem{pid, comm, file, e});
  problems_.push_back(ReadProblem{pid, comm, file, std::move(e)});
}

std::vector<ReadProblem> Sampler::take_new_problems() { return std::exchange(problems_, {}); }

std::vector<ProcessSample> Sampler::sample(double t) {
  // ---- 1. the tree.
  std::vector<Found> found =
      walk_tree(roots_, options_, tracked_, root_start_, buf_,
                [this](pid_t pid, const std::string& comm, const char* file, Error e) { note(pid, comm, file, std::move(e)); });

  // ---- 2. the cheap figures of every process, every sample.
  std::vector<ProcessSample> rows;
  std::vector<const ProcessDir*> dirs;
  rows.reserve(found.size());
  for (Found& f : found) {
    ProcessSample s;
    s.t = t;
    s.pid = f.stat.pid;
    s.ppid = f.stat.ppid;
    s.start_ticks = f.stat.start_ticks;
    s.comm = f.stat.comm;
    if (Tracked& tr = tracked_[s.pid]; !tr.cmdline_read || tr.comm != s.comm) {
      // First sight or an exec: the command line says more than comm ("exe" for /proc/self/exe).
      tr.comm = s.comm;
      tr.cmdline_read = true;
      s.cmdline = read_cmdline(f.dir, buf_);
    }
    auto note_of_s = [&](const char* file, Error e) { note(s.pid, s.comm, file, std::move(e)); };
    if (!read_cheap_figures(f.dir, s, buf_, note_of_s)) continue;
    rows.push_back(std::move(s));
    dirs.push_back(&f.dir);
  }

  // ---- 3. the map reads, as far as the budget allows, stalest first.
  const double capacity = options_.budget * 1.0;  // one second's worth
  if (first_) {
    tokens_s_ = capacity;
    first_ = false;
  } else {
    tokens_s_ = std::min(capacity, tokens_s_ + options_.budget * std::max(0.0, t - last_t_));
  }
  const double dt = std::max(0.0, t - last_t_);
  last_t_ = t;
  // A process whose last read cost at most an equal share of this interval's
  // budget is read every sample: all such reads together stay within the budget.
  const double cheap_s = rows.empty() ? 0 : options_.budget * dt / static_cast<double>(rows.size());
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return tracked_[rows[a].pid].last_map_read_t < tracked_[rows[b].pid].last_map_read_t;
  });
  std::vector<bool> drop(rows.size(), false);
  for (std::size_t i : order) {
    Tracked& tr = tracked_[rows[i].pid];
    const bool never = tr.last_map_read_t < 0;
    if (options_.budget < 1.0 && tokens_s_ <= 0 && !never && tr.last_map_cost_s > cheap_s) continue;
    ProcessSample& s = rows[i];
    const double cpu0 = thread_cpu_s();
    auto note_of_s = [&](const char* file, Error e) { note(s.pid, s.comm, file, std::move(e)); };
    drop[i] = !read_map_figures(*dirs[i], s, options_, maps_buf_, buf_, note_of_s);
    const double cost = thread_cpu_s() - cpu0;
    tokens_s_ -= cost;
    map_cpu_s_ += cost;
    ++map_reads_;
    tr.last_map_read_t = t;
    tr.last_map_cost_s = cost;
  }
  // A process that once had 100 000 mappings should not pin its 8 MiB of text forever.
  if (maps_buf_.capacity() > (std::size_t{8} << 20)) std::string().swap(maps_buf_);

  std::vector<ProcessSample> out;
  out.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!drop[i]) out.push_back(std::move(rows[i]));
  return out;
}

}  // namespace extmem::watch
