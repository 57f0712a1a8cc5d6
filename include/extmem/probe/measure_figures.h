// The --measure figures, typed: what the measuring run of a route logs for each
// leg and for the route (Measurement), and a row's "measure" object (RowMeasure).
// docs/probe.md, "--measure".
//
// Units are in the field names: *_gbps GB/s (1e9 bytes per second), *_us
// microseconds, *_ratio a plain ratio; figures are medians of repeated samples
// with their range. Every field is optional: a figure a route does not take, or
// could not take (then a *_error field says why), is absent.
//
// The JSON key of every field is written once, in the visit_fields() lists
// below; the codec, the text line and the Prometheus writer go through them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "extmem/core/verdict.h"

namespace extmem::probe {

/// The samples of one figure, summarised. With n == 0 nothing was sampled and
/// median, min and max are 0 (the JSON then has only "n").
struct Figure {
  double median = 0, min = 0, max = 0;
  std::uint64_t n = 0;
  /// GPU figures: the clock the samples were taken with ("vk-timestamp",
  /// "gl-time-elapsed", "cuda-event" or "wall"; measure::clocks), so submission
  /// latency is never read as bandwidth. Absent for CPU figures.
  std::optional<std::string> clock;
  bool operator==(const Figure&) const = default;
};

/// The timestamp facts of the queue family GPU copies were timed on (Vulkan
/// spec, "Timestamp Queries"): nanoseconds per tick, and the valid bits.
struct GpuTimestamp {
  double period_ns = 0;
  std::uint64_t valid_bits = 0;
  bool operator==(const GpuTimestamp&) const = default;
};

/// GPU copies of the whole allocation by one engine: copy commands ("gpu_*"
/// keys) or a compute shader ("shader_*" keys); measure::copy_leg.
struct CopyFigures {
  std::optional<Figure> out_gbps;       ///< shared -> a device-local partner
  std::optional<Figure> in_gbps;        ///< a device-local partner -> shared
  std::optional<Figure> baseline_gbps;  ///< partner -> partner, both device-local
  std::optional<std::uint64_t> copies_per_sample;  ///< copies batched in one sample (~5 ms)
  std::optional<std::string> clock;     ///< the clock of the last figure taken
  std::optional<std::string> error;     ///< "<what>: <step> -> <code>" of the call that ended the sampling
  bool operator==(const CopyFigures&) const = default;
};

/// Copies through an image route's shared image, beside the same copies through
/// a private image of the same create info (docs/probe.md, "T4 image rows").
struct ImageFigures {
  std::optional<std::string> extent;  ///< "WIDTHxHEIGHT", texels
  std::optional<std::uint64_t> copy_bytes;  ///< bytes one copy moves (4 a texel, rows packed)
  std::optional<std::uint64_t> copies_per_sample;
  std::optional<Figure> out_gbps, private_out_gbps, in_gbps, private_in_gbps;
  std::optional<double> out_ratio, in_ratio;  ///< shared median / private median
  std::optional<std::string> copy;    ///< the API call the copies use
  std::optional<std::string> layout;  ///< the image layout copies run in (Vulkan)
  std::optional<std::uint64_t> memory_type, partner_memory_type, private_memory_type;  ///< Vulkan memory type indices
  std::optional<std::uint64_t> private_array_flags;  ///< CUDA: the private array's CUDA_ARRAY3D flags
  std::optional<bool> restored;                     ///< the image's content was put back and checked
  std::optional<std::string> error, restore_error;
  bool operator==(const ImageFigures&) const = default;
};

/// The figures of one leg (a leg is one way the other process reaches the memory).
struct LegFigures {
  /// CPU bandwidth through the leg's mapping (memset, 64-bit loads), and its
  /// ratio to private anonymous memory of the same size (Measurement::baseline).
  std::optional<Figure> cpu_write_gbps, cpu_read_gbps;
  std::optional<double> cpu_write_ratio, cpu_read_ratio;
  CopyFigures gpu, shader;
  std::optional<std::string> gpu_clock_fallback;  ///< why the GPU figures are on the wall clock
  std::optional<GpuTimestamp> gpu_timestamp;
  std::optional<std::uint64_t> gpu_partner_memory_type;  ///< the copy partners' Vulkan memory type index
  /// "host" or "device-local": where the shared memory lies, so GPU copies of
  /// host memory are printed beside the PCIe link's rate.
  std::optional<std::string> gpu_shared_memory;
  std::optional<Figure> import_us, map_us;  ///< import (and map) of a fresh handle
  std::optional<std::string> import_error, map_error;
  ImageFigures image;
  /// UCX RMA (T5-ucx-rma): ucp_put_nbx (+ flush) and ucp_get_nbx of the whole allocation, GB/s,
  /// beside memcpy of the same bytes between two private buffers in the same process.
  std::optional<Figure> rma_put_gbps, rma_get_gbps, memcpy_gbps;
  std::optional<double> rma_put_ratio, rma_get_ratio;  ///< rma median / memcpy median
  std::optional<std::string> rma_error;                ///< "<step> -> <code>" of the call that ended the sampling
  bool operator==(const LegFigures&) const = default;
};

/// The clock the S1 GPU wake latencies were taken on: calibrated timestamps
/// in the host's time domain (VK_EXT_calibrated_timestamps) and the largest
/// deviation the calibration reported.
struct GpuWakeClock {
  std::string clock, time_domain;
  std::uint64_t max_deviation_ns = 0;
  bool operator==(const GpuWakeClock&) const = default;
};

/// Route-level latencies (microseconds) and the notes that go with them; the
/// S1 ones are on CLOCK_MONOTONIC of both processes (docs/probe.md, "S1 rows").
struct RouteFigures {
  std::optional<Figure> export_us;              ///< the exporter's fd export call (vkGetMemoryFdKHR and kin)
  std::optional<Figure> mmap_us;                ///< mmap + munmap of the received fd, no page touched
  std::optional<Figure> semaphore_wake_us;      ///< S1: the producer's signal -> the consumer's wait returns
  std::optional<Figure> socket_submit_wake_us;  ///< S1: a socket message and a submit instead of the semaphore
  std::optional<Figure> semaphore_gpu_wake_us;  ///< S1: the producer GPU's write -> the consumer GPU's start
  std::optional<Figure> socket_gpu_wake_us;     ///< S1: the same relayed by the host, no semaphore
  std::optional<GpuWakeClock> gpu_wake_clock;
  std::optional<std::string> gpu_clock_fallback;  ///< why the GPU wake latencies were not taken
  bool operator==(const RouteFigures&) const = default;
};

/// CPU bandwidth of private anonymous memory of `bytes`, in the same process:
/// what the legs' cpu_*_ratio are taken against.
struct CpuBaseline {
  std::optional<std::uint64_t> bytes;
  std::optional<Figure> cpu_write_gbps, cpu_read_gbps;
  bool operator==(const CpuBaseline&) const = default;
};

/// The PCIe link of the GPU's PCI function (VK_EXT_pci_bus_info, then sysfs
/// current_link_speed / current_link_width): its theoretical rate per
/// direction after line coding, or `unknown` saying why there is none.
struct PcieLink {
  std::optional<std::string> address;  ///< "dddd:bb:dd.f"
  std::optional<double> speed_gts;     ///< GT/s per lane
  std::optional<std::uint64_t> width;  ///< lanes
  std::optional<double> gbps;
  std::optional<std::string> unknown;
  bool operator==(const PcieLink&) const = default;
};

/// Everything one route half measured (measure::collected()).
struct Measurement {
  std::uint64_t size = 0;     ///< bytes of the largest view measured; 0 when only calls were timed
  std::uint64_t repeats = 0;  ///< samples per figure asked for
  CpuBaseline baseline;
  std::map<std::string, LegFigures> legs;  ///< by leg name
  RouteFigures route;
  std::optional<PcieLink> pcie_link;
  bool operator==(const Measurement&) const = default;
};

/// A row's "measure" object: the measuring run's status, and either its
/// figures (only for legs that round-tripped in the verdict run) or `error`,
/// why the measuring run brought none.
struct RowMeasure {
  RowStatus run_status = RowStatus::ok;
  std::optional<std::string> error;
  Measurement figures;
  bool operator==(const RowMeasure&) const = default;
};

/// Calls `visit(key, member...)` for every field of `f...` (one or more
/// LegFigures, const or not), in the order of the keys (the JSON object's).
template <class Visit, class... L>
void visit_fields(Visit&& visit, L&... f) {
  visit("cpu_read_gbps", f.cpu_read_gbps...);
  visit("cpu_read_ratio", f.cpu_read_ratio...);
  visit("cpu_write_gbps", f.cpu_write_gbps...);
  visit("cpu_write_ratio", f.cpu_write_ratio...);
  visit("gpu_baseline_gbps", f.gpu.baseline_gbps...);
  visit("gpu_clock", f.gpu.clock...);
  visit("gpu_clock_fallback", f.gpu_clock_fallback...);
  visit("gpu_copies_per_sample", f.gpu.copies_per_sample...);
  visit("gpu_error", f.gpu.error...);
  visit("gpu_in_gbps", f.gpu.in_gbps...);
  visit("gpu_out_gbps", f.gpu.out_gbps...);
  visit("gpu_partner_memory_type", f.gpu_partner_memory_type...);
  visit("gpu_shared_memory", f.gpu_shared_memory...);
  visit("gpu_timestamp", f.gpu_timestamp...);
  visit("image_copies_per_sample", f.image.copies_per_sample...);
  visit("image_copy", f.image.copy...);
  visit("image_copy_bytes", f.image.copy_bytes...);
  visit("image_error", f.image.error...);
  visit("image_extent", f.image.extent...);
  visit("image_in_gbps", f.image.in_gbps...);
  visit("image_in_ratio", f.image.in_ratio...);
  visit("image_layout", f.image.layout...);
  visit("image_memory_type", f.image.memory_type...);
  visit("image_out_gbps", f.image.out_gbps...);
  visit("image_out_ratio", f.image.out_ratio...);
  visit("image_partner_memory_type", f.image.partner_memory_type...);
  visit("image_private_array_flags", f.image.private_array_flags...);
  visit("image_private_in_gbps", f.image.private_in_gbps...);
  visit("image_private_memory_type", f.image.private_memory_type...);
  visit("image_private_out_gbps", f.image.private_out_gbps...);
  visit("image_restore_error", f.image.restore_error...);
  visit("image_restored", f.image.restored...);
  visit("import_error", f.import_error...);
  visit("import_us", f.import_us...);
  visit("map_error", f.map_error...);
  visit("map_us", f.map_us...);
  visit("memcpy_gbps", f.memcpy_gbps...);
  visit("rma_error", f.rma_error...);
  visit("rma_get_gbps", f.rma_get_gbps...);
  visit("rma_get_ratio", f.rma_get_ratio...);
  visit("rma_put_gbps", f.rma_put_gbps...);
  visit("rma_put_ratio", f.rma_put_ratio...);
  visit("shader_baseline_gbps", f.shader.baseline_gbps...);
  visit("shader_clock", f.shader.clock...);
  visit("shader_copies_per_sample", f.shader.copies_per_sample...);
  visit("shader_error", f.shader.error...);
  visit("shader_in_gbps", f.shader.in_gbps...);
  visit("shader_out_gbps", f.shader.out_gbps...);
}

/// The same for RouteFigures, in key order.
template <class Visit, class... R>
void visit_route_fields(Visit&& visit, R&... r) {
  visit("export_us", r.export_us...);
  visit("gpu_clock_fallback", r.gpu_clock_fallback...);
  visit("gpu_wake_clock", r.gpu_wake_clock...);
  visit("mmap_us", r.mmap_us...);
  visit("semaphore_gpu_wake_us", r.semaphore_gpu_wake_us...);
  visit("semaphore_wake_us", r.semaphore_wake_us...);
  visit("socket_gpu_wake_us", r.socket_gpu_wake_us...);
  visit("socket_submit_wake_us", r.socket_submit_wake_us...);
}

/// The same for CpuBaseline and PcieLink.
template <class Visit, class... B>
void visit_baseline_fields(Visit&& visit, B&... b) {
  visit("bytes", b.bytes...);
  visit("cpu_read_gbps", b.cpu_read_gbps...);
  visit("cpu_write_gbps", b.cpu_write_gbps...);
}
template <class Visit, class... P>
void visit_pcie_fields(Visit&& visit, P&... p) {
  visit("address", p.address...);
  visit("gbps", p.gbps...);
  visit("speed_gts", p.speed_gts...);
  visit("unknown", p.unknown...);
  visit("width", p.width...);
}

}  // namespace extmem::probe
