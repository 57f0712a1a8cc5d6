// Worker mode: a warm process that runs one route half after another
// (`extmem probe --worker`, started by the parent's worker pool). Its entry
// point, run_worker(), is public (extmem/probe/worker.h); this is the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <map>

#include "extmem/probe/worker.h"
#include "probe/done_codec.h"

namespace extmem::probe {

/// What a route left behind in this process, comparing two snapshots: fds
/// opened and not closed (number and readlink target), fds closed that were
/// open before, and the change in live Vulkan buffers/memories and GL shared
/// buffers (done_codec.h, Hygiene; pid and overlapped_warm_up are the caller's).
class HygieneSnapshot {
 public:
  static HygieneSnapshot take();
  Hygiene compare_to(const HygieneSnapshot& later) const;

 private:
  std::map<std::string, std::string> fds_;  // fd number (decimal text) -> target
  std::map<std::string, std::int64_t> live_;  // kHygieneCounters name -> count
};

}  // namespace extmem::probe
