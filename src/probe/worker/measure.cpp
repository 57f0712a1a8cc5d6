#include "probe/worker/measure.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "probe/worker/import_dup.h"
#include "probe/worker/shader_copy.h"
#include "probe/worker/vk_gpu_clock.h"
#include "extmem/os/clock.h"
#include "extmem/os/fd.h"
#include "extmem/probe/probe.h"
#include "vulkan/dispatch.h"

namespace extmem::probe::measure {
namespace {

struct Log {
  bool enabled = false;
  Measurement m{.repeats = kDefaultMeasureRepeats};  // enable() sets the run's repeats
};

Log& log() {
  static Log l;
  return l;
}

// Keeps the compiler from dropping the read loop.
volatile std::uint64_t g_sink = 0;

double write_seconds(std::span<std::byte> v, int value) {
  const double t0 = os::monotonic_seconds();
  std::memset(v.data(), value, v.size());
  asm volatile("" ::: "memory");
  return os::monotonic_seconds() - t0;
}

double read_seconds(std::span<const std::byte> v) {
  const double t0 = os::monotonic_seconds();
  const auto* p = reinterpret_cast<const volatile std::uint64_t*>(v.data());
  const std::size_t n = v.size() / 8;
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::size_t i = 0;
  // Four independent accumulators keep several loads in flight; volatile keeps every load.
  for (; i + 4 <= n; i += 4) {
    a ^= p[i];
    b ^= p[i + 1];
    c ^= p[i + 2];
    d ^= p[i + 3];
  }
  for (; i < n; ++i) a ^= p[i];
  g_sink = a ^ b ^ c ^ d;
  return os::monotonic_seconds() - t0;
}


// Write and read bandwidth samples through `v` (GB/s); one untimed write first faults the pages in.
// Slow memory (uncached device memory read by the CPU can crawl at tens of MB/s) stops after
// 3 samples once 10 s are spent, so the route stays within its timeout.
std::pair<std::vector<double>, std::vector<double>> cpu_samples(std::span<std::byte> v, unsigned repeats) {
  std::vector<double> w, r;
  (void)write_seconds(v, 0x5a);
  const double start = os::monotonic_seconds();
  for (unsigned i = 0; i < repeats; ++i) {
    if (i >= 3 && os::monotonic_seconds() - start > 10) break;
    w.push_back(gbps(v.size(), write_seconds(v, static_cast<int>(i & 0xff))));
    r.push_back(gbps(v.size(), read_seconds(v)));
  }
  return {w, r};
}

// A device-local memory type, preferring one that is not HOST_VISIBLE; -1 when none.
int device_local_type(const vk::Device& device) {
  const VkPhysicalDeviceMemoryProperties& m = device.memory_properties();
  int any = -1;
  for (std::uint32_t i = 0; i < m.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = m.memoryTypes[i].propertyFlags;
    if (!(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
    if (!(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) return static_cast<int>(i);
    if (any < 0) any = static_cast<int>(i);
  }
  return any;
}

}  // namespace

void enable(unsigned repeats) {
  log().enabled = true;
  log().m.repeats = std::clamp(repeats, 1u, 100u);
}

bool enabled() { return log().enabled; }
int device_local_memory_type(const vk::Device& device) { return device_local_type(device); }
void disable() { log() = Log{}; }
unsigned repeats() { return static_cast<unsigned>(log().m.repeats); }
LegFigures* leg(const std::string& leg) { return log().enabled ? &log().m.legs[leg] : nullptr; }
RouteFigures* route() { return log().enabled ? &log().m.route : nullptr; }
void measured_bytes(std::size_t bytes) {
  if (log().enabled) log().m.size = std::max<std::uint64_t>(log().m.size, bytes);
}

Figure figure(std::vector<double> s) {
  if (s.empty()) return {};
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  double median = n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return {.median = median, .min = s.front(), .max = s.back(), .n = n};
}

void cpu_leg(const std::string& leg, std::span<std::byte> view) {
  Log& l = log();
  if (!l.enabled || view.size() < 8) return;
  l.m.size = std::max<std::uint64_t>(l.m.size, view.size());
  CpuBaseline& base = l.m.baseline;
  if (base.bytes != view.size()) {
    // Private anonymous memory of the same size, in this same process: the figure the ratio is taken against.
    void* p = ::mmap(nullptr, view.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      auto [w, r] = cpu_samples(std::span<std::byte>(static_cast<std::byte*>(p), view.size()), repeats());
      base = {.bytes = view.size(), .cpu_write_gbps = figure(w), .cpu_read_gbps = figure(r)};
      ::munmap(p, view.size());
    }
  }
  std::vector<std::byte> saved(view.begin(), view.end());
  auto [w, r] = cpu_samples(view, repeats());
  std::memcpy(view.data(), saved.data(), saved.size());
  LegFigures& e = l.m.legs[leg];
  e.cpu_write_gbps = figure(w);
  e.cpu_read_gbps = figure(r);
  if (base.cpu_write_gbps && base.cpu_read_gbps) {
    const double bw = base.cpu_write_gbps->median, br = base.cpu_read_gbps->median;
    if (bw > 0) e.cpu_write_ratio = e.cpu_write_gbps->median / bw;
    if (br > 0) e.cpu_read_ratio = e.cpu_read_gbps->median / br;
  }
}

double gbps(std::size_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }

unsigned copies_per_sample(double one_copy_seconds) {
  if (one_copy_seconds <= 0 || one_copy_seconds >= 0.005) return 1;
  return static_cast<unsigned>(std::min<double>(kMaxCopiesPerSample, std::ceil(0.005 / one_copy_seconds)));
}

std::string step_and_code(const Error& e) { return fmt::format("{} -> {}", e.step, e.code); }

void copy_leg(const std::string& leg, std::size_t bytes, bool has_baseline, const CopyTimer& time,
              CopyFigures LegFigures::*engine) {
  Log& l = log();
  if (!l.enabled || bytes == 0) return;
  l.m.size = std::max<std::uint64_t>(l.m.size, bytes);
  CopyFigures& e = l.m.legs[leg].*engine;
  auto failed = [&](const std::string& what, const Error& err) { e.error = what + ": " + step_and_code(err); };
  if (auto saved = time(Copy::save, 1); !saved) {
    failed("save the shared bytes", saved.error());
    return;
  }
  // A sample is a batch of copies: a copy that is fast next to the timer's own fixed cost (the
  // submit and fence wait under the wall clock; a few microseconds of pipeline drain under a GPU
  // clock) is repeated until a sample lasts >= ~5 ms. Calibrated on the device's own memory, the
  // fastest copy measured here.
  const auto one = time(Copy::baseline, 1);
  const unsigned batch = one ? copies_per_sample(one->seconds) : 1;
  e.copies_per_sample = batch;
  // `name` is the figure's key, as the error names it.
  auto samples = [&](Copy c, std::optional<Figure>& into, const char* name) {
    std::vector<double> v;
    const char* clock = clocks::wall;
    for (unsigned i = 0; i < repeats(); ++i) {
      auto t = time(c, batch);
      if (!t) {
        failed(fmt::format("{}_{}", engine == &LegFigures::gpu ? "gpu" : "shader", name), t.error());
        return false;
      }
      v.push_back(gbps(bytes * batch, t->seconds));
      clock = t->clock;
    }
    into = figure(v);
    into->clock = clock;
    e.clock = clock;
    return true;
  };
  bool ok = samples(Copy::out, e.out_gbps, "out_gbps") && samples(Copy::in, e.in_gbps, "in_gbps");
  if (ok && has_baseline) samples(Copy::baseline, e.baseline_gbps, "baseline_gbps");
  (void)time(Copy::restore, 1);  // put the route's bytes back
}

void import_latency(const std::string& leg, const std::function<Result<double>()>& once) {
  Log& l = log();
  if (!l.enabled) return;
  std::vector<double> us;
  LegFigures& e = l.m.legs[leg];
  for (unsigned i = 0; i < repeats(); ++i) {
    auto t = once();
    if (!t) {
      e.import_error = step_and_code(t.error());
      break;
    }
    us.push_back(*t);
  }
  if (!us.empty()) e.import_us = figure(us);
}

void gpu_leg(const std::string& leg, const vk::Device& device, VkBuffer shared, std::size_t bytes) {
  Log& l = log();
  if (!l.enabled || bytes == 0) return;
  int dl = device_local_type(device);
  vk::AllocationRequest req;
  req.size = bytes;
  req.map = false;
  if (dl >= 0) req.allowed_type_bits = 1u << dl;
  LegFigures& e = l.m.legs[leg];
  std::vector<vk::Buffer> bufs;  // 0: keeps the shared bytes, 1 and 2: copy partners
  for (int i = 0; i < 3; ++i) {
    auto b = device.create_buffer(req);
    if (!b) {
      l.m.size = std::max<std::uint64_t>(l.m.size, bytes);
      e.gpu.error = "partner buffer: " + step_and_code(b.error());
      return;
    }
    bufs.push_back(std::move(*b));
  }
  e.gpu_partner_memory_type = bufs[1].memory_type_index;
  const vk::DeviceFns& f = device.fn();
  pcie_link(device);
  // GPU time from a timestamp pair in the same submission where the queue family
  // has timestamps; otherwise the wall clock, said so in the leg.
  const VkGpuClock clock(device);
  if (clock.timestamps())
    e.gpu_timestamp = GpuTimestamp{device.timestamp_period(), clock.valid_bits()};
  else
    e.gpu_clock_fallback = clock.fallback();
  auto timed = [&](const std::function<void(VkCommandBuffer)>& copies) { return clock.time(copies); };
  // `copies` back-to-back copy commands, a transfer barrier between them so they do not overlap.
  auto command_copy = [&](VkBuffer src, VkBuffer dst, unsigned copies) -> Result<Timed> {
    return timed([&](VkCommandBuffer cmd) {
      VkBufferCopy region{0, 0, bytes};
      for (unsigned c = 0; c < copies; ++c) {
        if (c > 0) {
          VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
          b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
          b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
          f.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &b, 0,
                                 nullptr, 0, nullptr);
        }
        f.vkCmdCopyBuffer(cmd, src, dst, 1, &region);
      }
    });
  };
  // Which buffers each copy moves between: the route's, the keeper, the two partners.
  auto ends = [&](Copy c) -> std::pair<VkBuffer, VkBuffer> {
    switch (c) {
      case Copy::save: return {shared, bufs[0].buffer};
      case Copy::out: return {shared, bufs[1].buffer};
      case Copy::in: return {bufs[1].buffer, shared};
      case Copy::baseline: return {bufs[1].buffer, bufs[2].buffer};
      case Copy::restore: break;
    }
    return {bufs[0].buffer, shared};
  };
  copy_leg(leg, bytes, dl >= 0, [&](Copy c, unsigned n) { return command_copy(ends(c).first, ends(c).second, n); });

  // The same figures through the shader cores; the route's bytes are saved and put back by copy commands.
  auto shader = ShaderCopy::create(device);
  if (!shader) {
    e.shader.error = step_and_code(shader.error());
    return;
  }
  if (bytes % 16 != 0 || bytes > (*shader)->max_bytes()) {
    e.shader.error = fmt::format("{} bytes: not a multiple of 16 or beyond maxStorageBufferRange ({} bytes)", bytes,
                                 (*shader)->max_bytes());
    return;
  }
  copy_leg(
      leg, bytes, dl >= 0,
      [&](Copy c, unsigned n) -> Result<Timed> {
        auto [src, dst] = ends(c);
        if (c == Copy::save || c == Copy::restore) return command_copy(src, dst, n);
        auto set = (*shader)->bind(src, dst, bytes);
        if (!set) return std::move(set).error();
        return timed([&](VkCommandBuffer cmd) { (*shader)->record(cmd, *set, bytes, n); });
      },
      &LegFigures::shader);
}

void import_leg(const std::string& leg, const vk::Device& device, const vk::AllocationRequest& req) {
  Log& l = log();
  if (!l.enabled) return;
  std::vector<double> import_us, map_us;
  LegFigures& e = l.m.legs[leg];
  for (unsigned i = 0; i < repeats(); ++i) {
    vk::AllocationRequest r = req;
    r.map = false;
    std::optional<ImportDup> dup;
    if (req.import_fd >= 0) {
      auto d = ImportDup::of(req.import_fd);
      if (!d) {
        e.import_error = step_and_code(d.error());
        break;
      }
      dup.emplace(std::move(*d));
      r.import_fd = dup->number();
    }
    vk::AllocationFailure af;
    const double t0 = os::monotonic_seconds();
    auto b = device.create_buffer(r, &af);
    const double t1 = os::monotonic_seconds();
    // Once vkAllocateMemory took the fd it belongs to the driver (Vulkan spec, "Importing memory from a
    // file descriptor"); a failed import leaves it with us.
    if (dup) (void)dup->settle(b || af.memory_allocated);
    if (!b) {
      e.import_error = step_and_code(af.error);
      break;
    }
    import_us.push_back((t1 - t0) * 1e6);
    // vkMapMemory is valid only on HOST_VISIBLE memory (Vulkan spec, vkMapMemory valid usage);
    // a device-local import (CUDA VMM memory) has an import latency and no map latency.
    const VkMemoryPropertyFlags flags = device.memory_properties().memoryTypes[b->memory_type_index].propertyFlags;
    if (!(flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) continue;
    void* p = nullptr;
    const double t2 = os::monotonic_seconds();
    VkResult mr = device.fn().vkMapMemory(device.handle(), b->memory, 0, VK_WHOLE_SIZE, 0, &p);
    const double t3 = os::monotonic_seconds();
    if (mr == VK_SUCCESS) {
      map_us.push_back((t3 - t2) * 1e6);
      device.fn().vkUnmapMemory(device.handle(), b->memory);
    } else if (!e.map_error) {
      e.map_error = std::string("vkMapMemory -> ") + vk::result_name(mr);
    }
  }
  if (!import_us.empty()) e.import_us = figure(import_us);
  if (!map_us.empty()) e.map_us = figure(map_us);
}

void route_latency(std::optional<Figure> RouteFigures::*which, std::vector<double> samples_us) {
  if (!log().enabled || samples_us.empty()) return;
  log().m.route.*which = figure(std::move(samples_us));
}

void merge_peer(const Measurement& peer) {
  if (!log().enabled) return;
  visit_route_fields(
      [](const char*, auto& mine, const auto& theirs) {
        if (theirs) mine = theirs;
      },
      log().m.route, peer.route);
}

void mmap_latency(int fd, std::size_t bytes) {
  if (!log().enabled || fd < 0 || bytes == 0) return;
  std::vector<double> us;
  for (unsigned i = 0; i < repeats(); ++i) {
    const double t0 = os::monotonic_seconds();
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const double t1 = os::monotonic_seconds();
    if (p == MAP_FAILED) return;  // a refused mapping is the leg's business, not a figure
    ::munmap(p, bytes);
    us.push_back((t1 - t0) * 1e6);
  }
  route_latency(&RouteFigures::mmap_us, us);
}

double pcie_gbps(double gts, unsigned lanes) {
  if (gts <= 0 || lanes == 0) return 0;
  // Line coding: 8b/10b for 2.5 and 5 GT/s, 128b/130b from 8 GT/s (gens 3 to 5).
  const double efficiency = gts < 8 ? 8.0 / 10.0 : 128.0 / 130.0;
  return gts * lanes * efficiency / 8.0;
}

void pcie_link(const vk::Device& device) {
  Log& l = log();
  if (!l.enabled || l.m.pcie_link) return;
  std::optional<vk::PciAddress> at = device.pci_address();
  if (!at) {
    l.m.pcie_link = PcieLink{.unknown = "VK_EXT_pci_bus_info not exposed by the device"};
    return;
  }
  const std::string address = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", at->domain, at->bus, at->device, at->function);
  const std::string dir = "/sys/bus/pci/devices/" + address + "/";
  auto first_line = [](const std::string& path) -> std::string {
    std::FILE* fp = std::fopen(path.c_str(), "re");
    if (fp == nullptr) return {};
    char buf[128] = {};
    const bool got = std::fgets(buf, sizeof buf, fp) != nullptr;
    std::fclose(fp);
    return got ? std::string(buf) : std::string();
  };
  const std::string speed = first_line(dir + "current_link_speed"), width = first_line(dir + "current_link_width");
  const double gts = std::atof(speed.c_str());  // "32.0 GT/s PCIe": the number leads
  const long lanes = std::atol(width.c_str());
  if (gts <= 0 || lanes <= 0) {
    l.m.pcie_link = PcieLink{.address = address,
                             .unknown = fmt::format("{}current_link_speed/current_link_width unreadable or 0", dir)};
    return;
  }
  l.m.pcie_link = PcieLink{.address = address,
                           .speed_gts = gts,
                           .width = static_cast<std::uint64_t>(lanes),
                           .gbps = pcie_gbps(gts, static_cast<unsigned>(lanes))};
}

std::optional<Measurement> collected() {
  if (!log().enabled) return std::nullopt;
  return log().m;
}

}  // namespace extmem::probe::measure
