#include "extmem/watch/sampler.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <numeric>

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
  // ---- 1. the tree: roots, then breadth first through the children lists,
  // then processes seen before that are no longer reached (orphans re-parented
  // outside the tree) as long as they are the same process.
  struct Found {
    ProcessDir dir;
    ProcStat stat;
  };
  std::vector<Found> found;
  std::unordered_set<pid_t> visited;
  std::unordered_map<pid_t, std::vector<pid_t>> scanned_children;
  if (options_.scan_all_processes) {
    auto all = list_all_processes(buf_);
    if (!all) note(0, "", "/proc", std::move(all).error());
    else
      for (auto [pid, ppid] : *all) scanned_children[ppid].push_back(pid);
  }
  enum class Via { root, listing, tracked };
  std::deque<std::pair<pid_t, Via>> queue;
  for (pid_t r : roots_) queue.emplace_back(r, Via::root);
  if (options_.adopt_own_children) {
    if (options_.scan_all_processes) {
      for (pid_t c : scanned_children[::getpid()]) queue.emplace_back(c, Via::listing);
    } else if (auto self = ProcessDir::open(::getpid()); self) {
      if (auto kids = self->children(buf_); kids)
        for (pid_t c : *kids) queue.emplace_back(c, Via::listing);
    }
  }
  std::vector<pid_t> earlier;
  for (const auto& [pid, tr] : tracked_) earlier.push_back(pid);
  std::sort(earlier.begin(), earlier.end());
  std::size_t next_earlier = 0;

  for (;;) {
    if (queue.empty()) {
      while (next_earlier < earlier.size() && visited.count(earlier[next_earlier]) != 0) ++next_earlier;
      if (next_earlier == earlier.size()) break;
      queue.emplace_back(earlier[next_earlier++], Via::tracked);
    }
    auto [pid, via] = queue.front();
    queue.pop_front();
    if (visited.count(pid) != 0) continue;
    auto dir = ProcessDir::open(pid);
    if (!dir) {
      if (!is_gone(dir.error())) note(pid, "", "dir", std::move(dir).error());
      if (via != Via::root) tracked_.erase(pid);
      continue;
    }
    if (Status r = dir->read("stat", buf_); !r) {
      if (!is_gone(r.error())) note(pid, "", "stat", std::move(r).error());
      tracked_.erase(pid);
      continue;
    }
    auto st = parse_stat(buf_);
    if (!st) {
      note(pid, "", "stat", std::move(st).error());
      continue;
    }
    if (st->state == 'Z' || st->state == 'X') {  // exited, not yet reaped: nothing left to measure
      tracked_.erase(pid);
      continue;
    }
    auto it = tracked_.find(pid);
    if (via == Via::root) {
      auto [rit, fresh] = root_start_.try_emplace(pid, st->start_ticks);
      if (!fresh && rit->second != st->start_ticks) continue;  // the root exited and its pid was reused
    } else if (via == Via::tracked) {
      if (it == tracked_.end() || it->second.start_ticks != st->start_ticks) {
        tracked_.erase(pid);  // reused pid: not a descendant any more
        continue;
      }
    }
    if (it == tracked_.end() || it->second.start_ticks != st->start_ticks) tracked_[pid] = Tracked{st->start_ticks, -1};
    visited.insert(pid);
    std::vector<pid_t> kids;
    if (options_.scan_all_processes) {
      kids = scanned_children[pid];
    } else if (auto k = dir->children(buf_); k) {
      kids = std::move(*k);
    } else if (!is_gone(k.error())) {
      note(pid, st->comm, "task/*/children", std::move(k).error());
    }
    for (pid_t c : kids) queue.emplace_back(c, Via::listing);
    // A vfork child before its exec (posix_spawn's) runs in its parent's address
    // space: its figures would be the parent's, so it is left out until it execs.
    if ((st->flags & kPfForkNoExec) != 0 && visited.count(st->ppid) != 0 && shares_address_space(pid, st->ppid))
      continue;
    found.push_back(Found{std::move(*dir), std::move(*st)});
  }

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
      if (f.dir.read("cmdline", buf_)) {
        s.cmdline = buf_.substr(0, 256);
        while (!s.cmdline.empty() && s.cmdline.back() == '\0') s.cmdline.pop_back();
        for (char& c : s.cmdline)
          if (c == '\0') c = ' ';
      }
    }
    if (Status r = f.dir.read("status", buf_); !r) {
      if (is_gone(r.error())) continue;
      note(s.pid, s.comm, "status", std::move(r).error());
    } else if (auto ps = parse_status(buf_); !ps) {
      note(s.pid, s.comm, "status", std::move(ps).error());
    } else {
      if (!ps->vm_rss_kib) continue;  // no address space any more: the process is exiting
      s.rss_kib = ps->vm_rss_kib;
      s.hwm_kib = ps->vm_hwm_kib;
      s.anon_kib = ps->rss_anon_kib;
      s.file_kib = ps->rss_file_kib;
      s.shmem_kib = ps->rss_shmem_kib;
      s.swap_kib = ps->vm_swap_kib;
      s.threads = ps->threads;
    }
    if (auto n = f.dir.fd_count(); n) {
      s.fds = *n;
    } else if (is_gone(n.error())) {
      continue;
    } else {
      note(s.pid, s.comm, "fd", std::move(n).error());
    }
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
    const ProcessDir& dir = *dirs[i];
    const double cpu0 = thread_cpu_s();
    if (Status r = dir.read("maps", maps_buf_); !r) {
      if (is_gone(r.error())) drop[i] = true;
      else note(s.pid, s.comm, "maps", std::move(r).error());
    } else if (options_.classes) {
      MapCensus census = census_of(maps_buf_);
      if (census.total > 0) {
        s.mappings = census.total;
        s.classes = std::move(census.classes);
        s.classes_taken = true;
      }
    } else if (std::uint64_t n = count_lines(maps_buf_); n > 0) {
      s.mappings = n;
    }
    if (options_.pss && !drop[i]) {
      if (Status r = dir.read("smaps_rollup", buf_); !r) {
        if (is_gone(r.error())) drop[i] = true;
        else note(s.pid, s.comm, "smaps_rollup", std::move(r).error());
      } else if (!buf_.empty()) {  // empty: the address space is gone
        if (auto pss = parse_pss_total(buf_); pss) s.pss_kib = *pss;
        else note(s.pid, s.comm, "smaps_rollup", std::move(pss).error());
      }
    }
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
