#include "probe/parent/schedule.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "probe/parent/measure_row.h"

namespace extmem::probe {
namespace {

Result<RowResult> run_row(const PlannedRow& planned, const EngineOptions& o) {
  RowResult r;
  if (planned.decided) {
    r.row = planned.row;
    r.verdict = *planned.decided;
    return r;
  }
  SuperviseParams p = o.base;
  p.memory_type = planned.memory_type;
  auto supervised = supervise(*planned.route, p);
  if (!supervised) return std::move(supervised).error();
  r = std::move(*supervised);
  r.row = planned.row;
  if (o.measure && has_round_trip(r)) {
    // A second run that only measures, at --measure-size: the verdict above is already decided.
    p.measure = true;
    p.measure_repeats = o.measure_repeats;
    p.layout.size = o.measure_size;
    p.soak_s = 0;                                     // the verdict run soaked already
    p.timeout_s = std::max(o.base.timeout_s, 300.0);  // 64 MiB through slow (uncached) memory takes a while
    auto measuring = supervise(*planned.route, p);
    if (!measuring) return std::move(measuring).error();
    r.measure = row_measure(r, *measuring);
  }
  return r;
}

}  // namespace

unsigned default_jobs() {
  unsigned jobs = kMaxDefaultJobs;
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) jobs = std::min<unsigned>(jobs, CPU_COUNT(&set));
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  unsigned long long kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") {
      jobs = std::min<unsigned long long>(jobs, kib / (512 * 1024));
      break;
    }
    meminfo.ignore(256, '\n');
  }
  return std::max(jobs, 1u);
}

Result<std::vector<RowResult>> execute_rows(const std::vector<PlannedRow>& plan, const EngineOptions& options,
                                            const RowSink& sink) {
  std::vector<RowResult> rows;
  rows.reserve(plan.size());
  for (const PlannedRow& planned : plan) {
    auto r = run_row(planned, options);
    if (!r) return std::move(r).error();
    if (sink) sink(*r);
    rows.push_back(std::move(*r));
  }
  return rows;
}

}  // namespace extmem::probe
