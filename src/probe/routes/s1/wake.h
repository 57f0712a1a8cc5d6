// What the S1 rows' --measure shares for the GPU-to-GPU wake figures
// (docs/probe.md, "S1", --measure): how a host thread stamps a word the GPU
// writes (the consumers with no clock another process can compare: GL, CUDA),
// and how the figures, or why they are missing, are reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probe/worker/child_context.h"

namespace extmem::probe::s1 {

/// Spins on the 32-bit `word` (host memory a GPU writes; 4-byte aligned) until
/// it reads `value`, and returns CLOCK_MONOTONIC seconds at that moment (late
/// by the write's path to the host and one poll, never early); 0 when
/// `bound_s` seconds pass first.
double wake_word_seen(void* word, std::uint32_t value, double bound_s = 5.0);

/// The route figures semaphore_gpu_wake_us and socket_gpu_wake_us (µs) and
/// gpu_wake_clock {clock, time_domain CLOCK_MONOTONIC, max_deviation_ns}.
/// Does nothing unless --measure is on.
void report_gpu_wake(const std::string& clock, std::vector<double> semaphore_us, std::vector<double> socket_us,
                     std::uint64_t max_deviation_ns);

/// Why the GPU wake figures were not taken: a step, and route field gpu_clock_fallback.
void gpu_wake_fallback(ChildContext& ctx, std::string why);

}  // namespace extmem::probe::s1
