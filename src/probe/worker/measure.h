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

#include "extmem/core/error.h"
#include "extmem/probe/measure_figures.h"
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
/// The memory type gpu_leg's copy partners use: a DEVICE_LOCAL type of
/// `device`, preferring one that is not HOST_VISIBLE; -1 when there is none.
int device_local_memory_type(const vk::Device& device);

/// The median, min, max and count of `samples` (any unit; the field says
/// which). Empty samples give n = 0.
Figure figure(std::vector<double> samples);

/// The figures of leg `leg`, created empty on first use, for a route to set
/// what only it knows (e.g. gpu_shared_memory); nullptr unless enabled(). The
/// pointer stays valid until disable().
LegFigures* leg(const std::string& leg);
/// The route-level figures; nullptr unless enabled().
RouteFigures* route();
/// Records that a figure moved `bytes` at a time (Measurement::size keeps the
/// largest), for a route that sets its figures itself. Does nothing unless enabled().
void measured_bytes(std::size_t bytes);

/// CPU write (memset) and read (64-bit loads) bandwidth through `view`, in
/// GB/s (1e9 bytes/s), as leg `leg`'s cpu_write_gbps / cpu_read_gbps, and the
/// same figures for private anonymous memory of the same size (once per
/// process, "baseline"). The view's bytes are saved first and restored after,
/// so the route's own regions survive. Sampling stops after 3 samples once
/// 10 s are spent (slow uncached memory), so n can be below repeats().
/// Does nothing unless enabled().
void cpu_leg(const std::string& leg, std::span<std::byte> view);

/// GPU copy bandwidth (vkCmdCopyBuffer of `bytes`, GB/s) into the shared buffer (gpu_in_gbps), out of it
/// (gpu_out_gbps), and between two device-local buffers (gpu_baseline_gbps)
/// when the device has a DEVICE_LOCAL type; copy_leg() samples, and the
/// copies of one sample go in one submission, timed by a timestamp query
/// pair in that submission when the queue family has timestampValidBits > 0
/// (clock "vk-timestamp"), else by wall clock (clock "wall", with
/// leg.gpu_clock_fallback saying why). The partner buffers are
/// device-local (preferring a type that is not HOST_VISIBLE). The shared
/// bytes are saved on the GPU and copied back after. A failing call is noted
/// as leg.gpu_error (step -> VkResult). Then the same three figures with the
/// copies done by a compute shader (ShaderCopy, shader_copy.h: the rate of the
/// memory, where the copy command may run on a slower copy engine) as
/// shader_out_gbps / shader_in_gbps / shader_baseline_gbps (save and restore
/// stay copy commands), or leg.shader_error saying why there are none
/// (a size that is not a multiple of 16 or beyond maxStorageBufferRange, a
/// failed pipeline). Does nothing unless enabled().
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

/// The clock a GPU figure was taken with; every GPU figure object carries its
/// name as "clock", so a reader never mistakes submission latency for bandwidth.
namespace clocks {
/// vkCmdWriteTimestamp before and after the copies (TOP_OF_PIPE, BOTTOM_OF_PIPE),
/// ticks masked to the queue family's timestampValidBits, times timestampPeriod
/// ns (Vulkan spec, "Timestamp Queries").
inline constexpr const char* vk_timestamp = "vk-timestamp";
/// A GL_TIME_ELAPSED_EXT query around the copies (GL_EXT_disjoint_timer_query),
/// nanoseconds; a sample whose GL_GPU_DISJOINT_EXT was raised is not used.
inline constexpr const char* gl_time_elapsed = "gl-time-elapsed";
/// cuEventElapsedTime between two events recorded on the default stream, ms.
inline constexpr const char* cuda_event = "cuda-event";
/// The host's monotonic clock from the first call until the GPU finished: the
/// labelled fallback (it includes submission and wait latency).
inline constexpr const char* wall = "wall";
}  // namespace clocks

/// One timed sample: seconds, and which clock (one of measure::clocks) took them.
struct Timed {
  double seconds = 0;
  const char* clock = clocks::wall;
};

/// Times `copies` back-to-back, non-overlapping GPU copies of the whole
/// allocation: the seconds they took on the named clock, or the failing call's Error.
using CopyTimer = std::function<Result<Timed>(Copy, unsigned copies)>;

/// The GPU copy figures of leg `leg` (Vulkan, CUDA and GL legs alike), each
/// copy being `bytes` long: times Copy::save, then one Copy::baseline to
/// calibrate (a copy under 5 ms makes a sample that many copies, up to
/// kMaxCopiesPerSample, so a sample lasts ~5 ms on its clock and a timer's
/// fixed cost stays small; gpu_copies_per_sample), then repeats() samples of
/// Copy::out, Copy::in and, when `has_baseline`, Copy::baseline, as
/// gpu_out_gbps / gpu_in_gbps / gpu_baseline_gbps (GB/s = 1e9 bytes/s; each
/// figure's "clock" is its samples' clock, and leg.gpu_clock the leg's), then
/// Copy::restore. The first failure is noted as the engine's error ("<what>:
/// <step> -> <code>") and ends the sampling. `engine` is which figures are
/// taken: LegFigures::gpu (copy commands, the gpu_* keys) or LegFigures::shader
/// (the same copies by a compute shader). Does nothing unless enabled().
void copy_leg(const std::string& leg, std::size_t bytes, bool has_baseline, const CopyTimer& time,
              CopyFigures LegFigures::*engine = &LegFigures::gpu);

/// Most copies one GPU sample batches (copy_leg's calibration).
inline constexpr unsigned kMaxCopiesPerSample = 256;

/// Copies per GPU sample for a copy that took `one_copy_seconds` alone: enough
/// for the sample to last ~5 ms on its clock (the timer's fixed cost then stays
/// small), at most kMaxCopiesPerSample; 1 for a copy of 5 ms or more, or one
/// that could not be timed (0 or less). copy_leg's and the image rows' rule.
unsigned copies_per_sample(double one_copy_seconds);

/// GB/s (1e9 bytes/s) of `bytes` moved in `seconds`; 0 for a non-positive time.
double gbps(std::size_t bytes, double seconds);

/// "<step> -> <code>" of a failed measurement call, as the *_error fields write it.
std::string step_and_code(const Error& e);

/// Repeats `once` repeats() times as leg `leg`'s import_us figure. `once`
/// imports (and maps) a fresh handle, undoes it, and returns the microseconds
/// the import itself took (undoing untimed). The first Error ends the
/// repeats and is noted as leg.import_error ("<step> -> <code>"). Does nothing
/// unless enabled().
void import_latency(const std::string& leg, const std::function<Result<double>()>& once);

/// Import and map latency of leg `leg`: repeats `req` (an import request,
/// fd or host pointer) through create_buffer with map=false (vkCreateBuffer +
/// vkAllocateMemory(import) + vkBindBufferMemory; an fd import imports a
/// fresh dup() each time, which the driver owns on success) as import_us, then
/// vkMapMemory of each imported allocation as map_us (only when its memory
/// type is HOST_VISIBLE), both in microseconds.
/// Does nothing unless enabled().
void import_leg(const std::string& leg, const vk::Device& device, const vk::AllocationRequest& req);

/// Records route-level latency `which` (e.g. &RouteFigures::export_us) from
/// samples in microseconds; nothing for no samples. Does nothing unless enabled().
void route_latency(std::optional<Figure> RouteFigures::*which, std::vector<double> samples_us);

/// Takes the route-level figures the peer measured (the measure of its setup
/// message): each one it has replaces this side's. Does nothing unless enabled().
void merge_peer(const Measurement& peer);

/// mmap(MAP_SHARED) + munmap of `bytes` of `fd`, repeated, as route-level
/// "mmap_us" (no page touched: the cost of the call). Does nothing unless enabled().
void mmap_latency(int fd, std::size_t bytes);

/// The theoretical rate of the PCIe link of `device`'s PCI function, for
/// printing beside the GPU figures that cross it: the device's PCI address from
/// VkPhysicalDevicePCIBusInfoPropertiesEXT (VK_EXT_pci_bus_info), then
/// current_link_speed ("32.0 GT/s PCIe") and current_link_width ("16") from
/// /sys/bus/pci/devices/<address>/. Logged as "pcie_link": {"address",
/// "speed_gts", "width", "gbps"} where gbps = GT/s x lanes x line-code
/// efficiency (8b/10b below 8 GT/s, 128b/130b from 8 GT/s) / 8 bits, 1e9
/// bytes/s per direction; or {"unknown": "<why>"} when the extension is
/// absent or sysfs does not say. Once per process; does nothing unless enabled().
void pcie_link(const vk::Device& device);

/// GB/s per direction of a PCIe link running `gts` GT/s per lane on `lanes`
/// lanes, after line coding (see pcie_link); 0 for a non-positive input.
double pcie_gbps(double gts, unsigned lanes);

/// Everything logged; nullopt when not enabled().
std::optional<Measurement> collected();

}  // namespace extmem::probe::measure
