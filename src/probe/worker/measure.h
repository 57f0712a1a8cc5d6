// --measure: bandwidth and latency figures of a route half, taken in a second
// run of the route that exists only to measure (the verdict comes from the
// first, unmeasured run; see run.cpp). docs/probe.md, "Output"; issue 6.
//
// One route half is one process, so the figures are collected in one
// process-wide log; ChildContext::report() attaches them to the route report.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "vulkan/context.h"

namespace extmem::probe::measure {

/// Turns measuring on in this process with `repeats` samples per figure (1..100).
void enable(unsigned repeats);
/// Whether this process measures (a child started with --measure).
bool enabled();
/// Turns measuring off and drops everything logged (tests that enable() in-process).
void disable();
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
/// when the device has a DEVICE_LOCAL type; copy_leg() samples, and the
/// copies of one sample go in one submission. The partner buffers are
/// device-local (preferring a type that is not HOST_VISIBLE). The shared
/// bytes are saved on the GPU and copied back after. A failing call is noted
/// as leg.gpu_error (step -> VkResult). Does nothing unless enabled().
void gpu_leg(const std::string& leg, const vk::Device& device, VkBuffer shared, std::size_t bytes);

/// Which copy a CopyTimer is asked to time. "Shared" is the route's
/// allocation; "partner" and "second partner" are device-local buffers of the
/// same size that the caller owns; "keep" holds the route's bytes meanwhile.
enum class Copy {
  save,      ///< shared -> keep (once, before any sample)
  out,       ///< shared -> partner: gpu_out_gbps
  in,        ///< partner -> shared: gpu_in_gbps
  baseline,  ///< partner -> second partner: gpu_baseline_gbps and the batch calibration
  restore,   ///< keep -> shared (once, at the end, also after a failed sample)
};

/// Seconds that `copies` back-to-back, non-overlapping GPU copies of the whole
/// allocation took (wall clock from the first call until the GPU finished),
/// or the failing call's Error.
using CopyTimer = std::function<Result<double>(Copy, unsigned copies)>;

/// The GPU copy figures of leg `leg` (Vulkan, CUDA and GL legs alike), each
/// copy being `bytes` long: times Copy::save, then one Copy::baseline to
/// calibrate (a copy under 5 ms makes a sample that many copies, up to 64, so
/// a sample lasts ~5 ms; gpu_copies_per_sample), then repeats() samples of
/// Copy::out, Copy::in and, when `has_baseline`, Copy::baseline, as
/// gpu_out_gbps / gpu_in_gbps / gpu_baseline_gbps (GB/s = 1e9 bytes/s), then
/// Copy::restore. The first failure is noted as leg.gpu_error ("<what>: <step>
/// -> <code>") and ends the sampling. Does nothing unless enabled().
void copy_leg(const std::string& leg, std::size_t bytes, bool has_baseline, const CopyTimer& time);

/// Repeats `once` repeats() times as leg `leg`'s import_us figure. `once`
/// imports (and maps) a fresh handle, undoes it, and returns the microseconds
/// the import itself took (undoing untimed). The first Error ends the
/// repeats and is noted as leg.import_error ("<step> -> <code>"). Does nothing
/// unless enabled().
void import_latency(const std::string& leg, const std::function<Result<double>()>& once);

/// Sets leg `leg`'s field `key` to `value` (e.g. gpu_error when a partner
/// buffer cannot be allocated). Does nothing unless enabled().
void leg_field(const std::string& leg, const std::string& key, nlohmann::json value);

/// Import and map latency of leg `leg`: repeats `req` (an import request,
/// fd or host pointer) through create_buffer with map=false (vkCreateBuffer +
/// vkAllocateMemory(import) + vkBindBufferMemory; an fd import imports a
/// fresh dup() each time, which the driver owns on success) as import_us, then
/// vkMapMemory of each imported allocation as map_us (only when its memory
/// type is HOST_VISIBLE), both in microseconds.
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
