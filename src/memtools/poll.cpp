#include "extmem/memtools/poll.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <ostream>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "extmem/watch/procfs.h"
#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

using Clock = std::chrono::steady_clock;

// What the poller remembers about one live process between rounds.
struct Tracked {
  bool given_up = false;                 // its maps or memory could not be read (reported once)
  bool left_out = false;                 // beyond --max-processes: never written (reported once)
  pid_t same_memory_as = 0;              // a task in that known process's address space: never served itself
  std::set<std::uint64_t> reported;      // mapping starts whose problem was reported already
  std::set<std::uint64_t> dry_pending;   // dry run: mapping starts whose hit was shown and still holds
};

// Whether `pid` ended after find_processes listed it: gone, or between its exit and
// its reaping, when its address space is released already (maps reads empty).
bool ended_since_listed(pid_t pid) {
  auto dir = watch::ProcessDir::open(pid);
  if (!dir) return watch::is_gone(dir.error());
  std::string buf;
  auto mappings = dir->mapping_count(buf);
  return mappings ? *mappings == 0 : watch::is_gone(mappings.error());
}

class Poller {
 public:
  Poller(const PollOptions& o, const AuditLog& audit, std::ostream& out, std::ostream& err)
      : o_(o), audit_(audit), out_(out), err_(err) {}

  // One pass over the matching processes. Returns an error only when /proc
  // cannot be listed or the audit log cannot be written.
  Status round() {
    ++summary_.rounds;
    auto procs = find_processes(o_.processes);
    if (!procs) return std::move(procs).error();
    std::set<pid_t> live;
    std::vector<pid_t> ended;
    for (const ProcessInfo& p : *procs) {
      live.insert(p.pid);
      if (known_.count(p.pid) > 0) continue;
      Tracked t;
      // A task with its own pid in another's address space (CLONE_VM without
      // CLONE_THREAD: a vfork child before its exec, LeakSanitizer's tracer while the
      // process exits) holds that process's memory, not more of it: it is neither
      // written again nor counted against --max-processes.
      for (const auto& [pid, other] : known_) {
        if (other.same_memory_as == 0 && watch::shares_address_space(p.pid, pid)) {
          t.same_memory_as = pid;
          break;
        }
      }
      // A task that exits between the listing and kcmp (LeakSanitizer's tracer is short-lived)
      // has no address space left, so kcmp finds it unlike every other: it is not a process to count.
      if (t.same_memory_as == 0 && ended_since_listed(p.pid)) {
        live.erase(p.pid);
        ended.push_back(p.pid);
        continue;
      }
      if (t.same_memory_as != 0) {
        known_.emplace(p.pid, t);
        say(fmt::format("poll: = pid {} comm={} shares the address space of pid {}: the same memory, not served again",
                        p.pid, p.comm, t.same_memory_as));
        continue;
      }
      // The bound is on the run, not on one moment: a process served and gone still counts.
      t.left_out = o_.max_processes && served_ >= *o_.max_processes;
      if (!t.left_out) ++served_;
      known_.emplace(p.pid, t);
      ++summary_.processes_seen;
      if (t.left_out) {
        ++summary_.left_out;
        err_ << fmt::format("poll: pid {} comm={} matches too, but --max-processes={} processes were served already "
                            "in this run: it is not "
                            "written (give --max-processes=N or --all to write to more)\n",
                            p.pid, p.comm, *o_.max_processes);
        err_.flush();
      } else {
        say(fmt::format("poll: + pid {} comm={}", p.pid, p.comm));
      }
    }
    std::erase_if(*procs, [&](const ProcessInfo& p) { return std::find(ended.begin(), ended.end(), p.pid) != ended.end(); });
    for (auto it = known_.begin(); it != known_.end();) {
      if (live.count(it->first) == 0) {
        say(fmt::format("poll: - pid {} gone", it->first));
        it = known_.erase(it);
      } else {
        ++it;
      }
    }
    if (!previewed_ && summary_.writes == 0) preview(*procs);
    for (const ProcessInfo& p : *procs) {
      if (auto st = serve(p, known_.at(p.pid)); !st) return st;
      if (done()) break;
    }
    return {};
  }

  bool done() const { return o_.max_writes && summary_.writes >= *o_.max_writes; }
  const PollSummary& summary() const { return summary_; }

 private:
  void say(const std::string& line) {
    out_ << line << '\n';
    out_.flush();
  }
  void complain(Tracked& t, std::optional<std::uint64_t> mapping_start, const std::string& line) {
    if (mapping_start && !t.reported.insert(*mapping_start).second) return;
    err_ << line << '\n';
    err_.flush();
  }

  // Once, before anything is written, when more than one process is served:
  // every word that would be written now, read but not written.
  void preview(const std::vector<ProcessInfo>& procs) {
    std::vector<std::string> lines;
    std::size_t served = 0;
    for (const ProcessInfo& p : procs) {
      if (known_.at(p.pid).left_out || known_.at(p.pid).same_memory_as != 0) continue;
      ++served;
      auto maps = os::read_maps(p.pid);
      if (!maps) continue;
      auto target = WordTarget::open_process(p.pid, false);
      for (const os::MapEntry& m : *maps) {
        if (!o_.match.matches(m) || m.size() < o_.width || o_.offset > m.size() - o_.width) continue;
        const std::uint64_t address = m.start + o_.offset;
        auto value = target ? target->read(address, o_.width) : Result<std::uint64_t>(target.error());
        lines.push_back(fmt::format("poll: preview: pid {} comm={} {:#x} now {} -> {:#x} {} in {}", p.pid, p.comm,
                                    address, value ? fmt::format("{:#x}", *value) : "unreadable", o_.set,
                                    value && o_.when.holds(*value) ? "(condition holds: would write)"
                                                                   : "(condition does not hold yet)",
                                    format_mapping(m)));
      }
    }
    if (served < 2) return;
    previewed_ = true;
    say(fmt::format("poll: {} processes are served; before any write, what would be written now:", served));
    for (const std::string& l : lines) say(l);
  }

  // Every matching mapping of one process: read the word, write when the condition holds.
  Status serve(const ProcessInfo& p, Tracked& t) {
    if (t.given_up || t.left_out || t.same_memory_as != 0) return {};
    auto maps = os::read_maps(p.pid);
    if (!maps) {
      if (!process_gone(maps.error())) {
        t.given_up = true;
        ++summary_.failures;
        complain(t, std::nullopt, fmt::format("poll: pid {}: {} (skipped while it runs)", p.pid, maps.error().message()));
      }
      return {};
    }
    std::optional<WordTarget> target;
    for (const os::MapEntry& m : *maps) {
      if (!o_.match.matches(m)) continue;
      if (m.size() < o_.width || o_.offset > m.size() - o_.width) {
        complain(t, m.start, fmt::format("poll: pid {}: mapping {} is too small for a {}-byte word at offset {:#x}",
                                         p.pid, format_mapping(m), o_.width, o_.offset));
        continue;
      }
      if (!o_.dry_run && m.perms.size() >= 2 && m.perms[1] != 'w') {
        complain(t, m.start, fmt::format("poll: pid {}: mapping {} is not writable; not written", p.pid,
                                         format_mapping(m)));
        continue;
      }
      if (!target) {
        auto opened = WordTarget::open_process(p.pid, !o_.dry_run);
        if (!opened) {
          if (!process_gone(opened.error())) {
            t.given_up = true;
            ++summary_.failures;
            complain(t, std::nullopt, fmt::format("poll: pid {}: {} (skipped while it runs)", p.pid,
                                                  opened.error().message()));
          }
          return {};
        }
        target.emplace(std::move(*opened));
      }
      const std::uint64_t address = m.start + o_.offset;
      auto value = target->read(address, o_.width);
      if (!value) {
        if (process_gone(value.error())) return {};
        ++summary_.failures;
        complain(t, m.start, fmt::format("poll: pid {}: {}", p.pid, value.error().message()));
        continue;
      }
      if (!o_.when.holds(*value)) {
        t.dry_pending.erase(m.start);
        continue;
      }
      if (o_.dry_run) {
        // The word does not change in a dry run: show each hit once while it lasts.
        if (!t.dry_pending.insert(m.start).second) continue;
        ++summary_.writes;
        say(fmt::format("poll: would write pid {} {:#x} {:#x} -> {:#x} in {}", p.pid, address, *value, o_.set,
                        format_mapping(m)));
      } else {
        auto record = write_checked(*target, &m, address, o_.width, o_.set, *value);
        if (!record) {
          // The word changed between our read and our write: no longer a hit.
          if (word_code(record.error()) == WordCode::expect_mismatch || process_gone(record.error())) continue;
          ++summary_.failures;
          complain(t, m.start, fmt::format("poll: pid {}: {}", p.pid, record.error().message()));
          continue;
        }
        record->comm = p.comm;
        ++summary_.writes;
        if (auto st = audit_.record(*record); !st) return st;
        say(fmt::format("poll: write pid {} {:#x} {:#x} -> {:#x} ({}) in {}", p.pid, address, record->old_value,
                        record->written,
                        record->read_back ? fmt::format("read back {:#x}", *record->read_back) : "ended right after",
                        format_mapping(m)));
      }
      if (done()) return {};
    }
    return {};
  }

  const PollOptions& o_;
  const AuditLog& audit_;
  std::ostream& out_;
  std::ostream& err_;
  std::map<pid_t, Tracked> known_;
  PollSummary summary_;
  bool previewed_ = false;
  std::uint64_t served_ = 0;  // processes admitted for writing so far in this run
};

}  // namespace

Result<Condition> parse_condition(std::string_view text, unsigned width, SyntaxError* syntax) {
  const std::string accepted = fmt::format("OP VALUE with OP one of == != < <= > >= and VALUE {} that fits in {} byte{}",
                                           describe(NumberStyle::value), width, width == 1 ? "" : "s");
  auto fail = [&](std::size_t column, std::string problem) {
    return detail::syntax_failure(syntax, "condition", text, column, std::move(problem), accepted);
  };
  if (!valid_width(width)) return fail(0, fmt::format("word width {} is not 1, 2, 4 or 8", width));
  static constexpr std::pair<std::string_view, CompareOp> kOps[] = {
      {"==", CompareOp::eq}, {"!=", CompareOp::ne}, {"<=", CompareOp::le},
      {">=", CompareOp::ge}, {"<", CompareOp::lt},  {">", CompareOp::gt}};
  for (const auto& [spelling, op] : kOps) {
    if (text.substr(0, spelling.size()) != spelling) continue;
    detail::ScanFailure failure;
    auto value = detail::scan_number(text, spelling.size(), text.size(), NumberStyle::value, failure);
    if (!value) return fail(failure.column, failure.problem);
    if (*value > max_word_value(width))
      return fail(spelling.size(), fmt::format("{:#x} does not fit in a {}-byte word", *value, width));
    return Condition{op, *value};
  }
  return fail(0, fmt::format("expected an operator (== != < <= > >=), found {}", detail::quote_char(text, 0)));
}

Result<PollSummary> run_poll(const PollOptions& options, const AuditLog& audit, std::ostream& out,
                             std::ostream& err, const std::atomic<bool>* stop) {
  const auto start = Clock::now();
  const auto period = std::chrono::duration<double>(options.period_s);
  const auto stopped = [&] {
    if (stop != nullptr && stop->load()) return true;
    return options.duration_s && Clock::now() - start >= std::chrono::duration<double>(*options.duration_s);
  };
  Poller poller(options, audit, out, err);
  while (!stopped() && !poller.done()) {
    const auto round_start = Clock::now();
    if (auto st = poller.round(); !st) return std::move(st).error();
    if (poller.done()) break;
    // Sleep out the period in short slices so a stop request or the duration ends it promptly.
    while (!stopped() && Clock::now() - round_start < period) {
      const auto left = period - (Clock::now() - round_start);
      std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(left, std::chrono::milliseconds(50)));
    }
  }
  const PollSummary& s = poller.summary();
  out << fmt::format("poll: {} {} in {} round{}, {} process{} seen{}, {} failure{}\n", s.writes,
                     options.dry_run ? (s.writes == 1 ? "would-be write" : "would-be writes")
                                     : (s.writes == 1 ? "write" : "writes"),
                     s.rounds, s.rounds == 1 ? "" : "s", s.processes_seen, s.processes_seen == 1 ? "" : "es",
                     s.left_out > 0 ? fmt::format(" ({} left out by --max-processes)", s.left_out) : "", s.failures, s.failures == 1 ? "" : "s");
  out.flush();
  return s;
}

}  // namespace extmem::memtools
