// A fleet's runs over time (fleet.h): targets, and how each row behaved over a target's runs.
#include <algorithm>
#include <numeric>

#include "extmem/report/report.h"

namespace extmem::report {

const char* to_string(History h) {
  switch (h) {
    case History::single: return "single";
    case History::stable: return "stable";
    case History::changed: return "changed";
    case History::flaky: return "flaky";
  }
  return "?";
}

std::vector<Target> targets_of(const std::vector<Run>& runs) {
  std::vector<Target> out;
  for (const Run& r : runs) {
    auto same = [&](const Target& t) {
      return t.node == r.node && t.options == r.options &&
             (!t.device_uuid.empty() || !r.device_uuid.empty() ? t.device_uuid == r.device_uuid : t.device == r.device);
    };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it == out.end()) it = out.insert(out.end(), Target{r.node, r.device, r.device_uuid, r.options, {}});
    it->runs.push_back(&r);
  }
  // Oldest first; a run without a time keeps its command-line place before the timed ones.
  for (Target& t : out)
    std::stable_sort(t.runs.begin(), t.runs.end(), [](const Run* a, const Run* b) {
      return a->time.value_or(INT64_MIN) < b->time.value_or(INT64_MIN);
    });
  return out;
}

History classify(const std::vector<std::string>& statuses, const std::string& expected, std::size_t* since) {
  std::vector<std::string> seq;
  if (!expected.empty()) seq.push_back(expected);
  seq.insert(seq.end(), statuses.begin(), statuses.end());
  std::size_t switches = 0, first_after = 0;
  for (std::size_t i = 1; i < seq.size(); ++i) {
    if (seq[i] == seq[i - 1]) continue;
    if (switches++ == 0) first_after = expected.empty() ? i : i - 1;
  }
  if (since != nullptr) *since = first_after;
  if (seq.size() <= 1) return History::single;
  return switches == 0 ? History::stable : switches == 1 ? History::changed : History::flaky;
}

}  // namespace extmem::report
