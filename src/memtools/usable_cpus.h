// Private to memtools: how many CPUs this process may run on, for sizing
// thread pools.
#pragma once

namespace extmem::memtools::detail {

/// The number of CPUs in the calling thread's affinity mask (sched_getaffinity:
/// what taskset, cgroup cpusets and container limits leave us), which can be
/// fewer than the machine has online (what std::thread::hardware_concurrency
/// counts). Never fails: falls back to hardware_concurrency when the mask
/// cannot be read, and is at least 1.
unsigned usable_cpus();

}  // namespace extmem::memtools::detail
