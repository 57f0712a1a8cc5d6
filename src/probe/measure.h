// --measure: bandwidth and latency figures of a route half, taken in a second
// run of the route that exists only to measure (the verdict comes from the
// first, unmeasured run; see run.cpp). spec/probe.md "Output"; issue 6.
//
// One route half is one process, so the figures are collected in one
// process-wide log; ChildContext::report() attaches them to the route report.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vulkan/context.h"

namespace extmem::probe::measure {

/// Turns measuring on in this process with `repeats` samples per figure (1..100).
void enable(unsigned repeats);
/// Whether this process measures (a child started with --measure).
bool enabled();
/// Samples per figure (enable()'s `repeats`).
unsigned repeats();

/// {"median", "min", "max", "n"} of `samples` (any unit; the key says which).
/// Empty samples give {"n": 0}.
nlohmann::json figure(std::vector<double> samples);

/// CPU write (memset) and read (64-bit loads) bandwidth through `view`, in
/// GB/s (1e9 bytes/s), as leg `leg`'s cpu_write_gbps / cpu_read_gbps, and the
/// same figures for private anonymous memory of the same size (once per
/// process, "baseline"). The view's bytes are saved first and restored after,
/// so the route's own regions survive. Sampling stops after 3 samples once
/// 10 s are spent (slow uncached memory), so n can be below repeats().
/// Does nothing unless enabled().
void cpu_leg(const std::string& leg, std::span<std::byte> view);

/// GPU copy bandwidth (vkCmdCopyBuffer of `bytes`, wall clock around submit
/// and fence wait, GB/s) into the shared buffer (gpu_in_gbps), out of it
/// (gpu_out_gbps), and between two device-local buffers (gpu_baseline_gbps)
/// when the device has a DEVICE_LOCAL type. When one copy takes under 5 ms, a
/// sample is several copies in one submission (gpu_copies_per_sample, at most
/// 64) so the submit/wait overhead stays small next to it. The partner buffers are
/// device-local (preferring a type that is not HOST_VISIBLE). The shared
/// bytes are saved on the GPU and copied back after. A failing call is noted
/// as leg.gpu_error (step -> VkResult). Does nothing unless enabled().
void gpu_leg(const std::string& leg, const vk::Device& device, VkBuffer shared, std::size_t bytes);

/// Import and map latency of leg `leg`: repeats `req` (an import request,
/// fd or host pointer) through create_buffer with map=false (vkCreateBuffer +
/// vkAllocateMemory(import) + vkBindBufferMemory; an fd import imports a
/// fresh dup() each time, which the driver owns on success) as import_us, then
/// vkMapMemory of each imported allocation as map_us, both in microseconds.
/// Does nothing unless enabled().
void import_leg(const std::string& leg, const vk::Device& device, const vk::AllocationRequest& req);

/// Records a route-level latency (e.g. "export_us", "mmap_us") from samples in microseconds.
void route_latency(const std::string& key, std::vector<double> samples_us);

/// Adds a route-level figure the peer measured (the "measure" object of its setup message).
void merge_peer(const nlohmann::json& peer);

/// mmap(MAP_SHARED) + munmap of `bytes` of `fd`, repeated, as route-level
/// "mmap_us" (no page touched: the cost of the call). Does nothing unless enabled().
void mmap_latency(int fd, std::size_t bytes);

/// Everything logged: {"size", "repeats", "baseline", "legs": {name: {...}}, "route": {...}};
/// null when not enabled().
nlohmann::json collected();

}  // namespace extmem::probe::measure
