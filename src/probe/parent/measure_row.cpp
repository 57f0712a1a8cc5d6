#include "probe/parent/measure_row.h"

#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

namespace extmem::probe {
namespace {

// "12.3 [11.9-12.6]" for a figure; "" when it has no samples.
std::string fig(const std::optional<Figure>& f, const char* unit) {
  if (!f || f->n == 0) return {};
  return fmt::format("{:.3g}{} [{:.3g}-{:.3g}]", f->median, unit, f->min, f->max);
}

// `v` with the figure's clock after it, " (vk-timestamp)", when it has one.
std::string with_clock(std::string v, const std::optional<Figure>& f) {
  if (!v.empty() && f->clock) v += fmt::format(" ({})", *f->clock);
  return v;
}

// The figures of one leg, in the line's order.
std::vector<std::string> leg_parts(const LegFigures& e, const CpuBaseline& base, const std::optional<PcieLink>& link) {
  std::vector<std::string> f;
  auto ratio_of = [](const std::optional<double>& ratio, const std::optional<Figure>& of, const char* what = "private") {
    return ratio ? fmt::format(" (x{:.2f} of {} {})", *ratio, what, fig(of, " GB/s")) : std::string();
  };
  auto cpu = [&](const std::optional<Figure>& fig_, const std::optional<double>& ratio,
                 const std::optional<Figure>& base_fig, const char* label) {
    std::string v = fig(fig_, " GB/s");
    if (!v.empty()) f.push_back(fmt::format("{}={}{}", label, v, ratio_of(ratio, base_fig)));
  };
  cpu(e.cpu_write_gbps, e.cpu_write_ratio, base.cpu_write_gbps, "cpu-write");
  cpu(e.cpu_read_gbps, e.cpu_read_ratio, base.cpu_read_gbps, "cpu-read");
  // GPU figures name their clock (shader-*: the same copies by a compute shader); copies in and out
  // of shared memory that is host memory are printed beside the PCIe link's theoretical rate.
  const bool crosses_link = link && link->gbps && e.gpu_shared_memory == "host";
  const std::string link_rate =
      crosses_link ? fmt::format(" [PCIe x{} {:.3g} GT/s: {:.3g} GB/s]", link->width.value_or(0),
                                 link->speed_gts.value_or(0), *link->gbps)
                   : std::string();
  struct Gpu {
    const std::optional<Figure>& figure;
    const char* label;
    const char* unit;
    bool over_link;
  };
  for (const Gpu& g : {Gpu{e.gpu.out_gbps, "gpu-out", " GB/s", true}, Gpu{e.gpu.in_gbps, "gpu-in", " GB/s", true},
                       Gpu{e.gpu.baseline_gbps, "gpu-device-local", " GB/s", false},
                       Gpu{e.shader.out_gbps, "shader-out", " GB/s", true}, Gpu{e.shader.in_gbps, "shader-in", " GB/s", true},
                       Gpu{e.shader.baseline_gbps, "shader-device-local", " GB/s", false},
                       Gpu{e.import_us, "import", " us", false}, Gpu{e.map_us, "map", " us", false}}) {
    std::string v = with_clock(fig(g.figure, g.unit), g.figure);
    if (v.empty()) continue;
    if (g.over_link) v += link_rate;
    f.push_back(fmt::format("{}={}", g.label, v));
  }
  // Image copies through the shared image, each beside the same copy through a private image
  // (T4 image rows, docs/probe.md "T4 image rows").
  const ImageFigures& im = e.image;
  for (auto [shared, priv, ratio, label] : {std::tuple{&im.out_gbps, &im.private_out_gbps, &im.out_ratio, "image-out"},
                                            std::tuple{&im.in_gbps, &im.private_in_gbps, &im.in_ratio, "image-in"}}) {
    std::string v = with_clock(fig(*shared, " GB/s"), *shared);
    if (!v.empty()) f.push_back(fmt::format("{}={}{}", label, v, ratio_of(*ratio, *priv)));
  }
  // UCX RMA of the whole allocation (T5-ucx-rma), each beside memcpy of the same bytes.
  for (auto [rma, ratio, label] : {std::tuple{&e.rma_put_gbps, &e.rma_put_ratio, "ucx-put"},
                                   std::tuple{&e.rma_get_gbps, &e.rma_get_ratio, "ucx-get"}}) {
    std::string v = fig(*rma, " GB/s");
    if (!v.empty()) f.push_back(fmt::format("{}={}{}", label, v, ratio_of(*ratio, e.memcpy_gbps, "memcpy")));
  }
  if (im.copies_per_sample)
    f.push_back(fmt::format("image={} copies-per-sample={}", im.extent.value_or("?"), *im.copies_per_sample));
  for (auto [key, err] : {std::pair{"gpu_error", &e.gpu.error}, std::pair{"shader_error", &e.shader.error},
                          std::pair{"import_error", &e.import_error}, std::pair{"map_error", &e.map_error},
                          std::pair{"gpu_clock_fallback", &e.gpu_clock_fallback}, std::pair{"image_error", &im.error},
                          std::pair{"image_restore_error", &im.restore_error},
                          std::pair{"rma_error", &e.rma_error}})
    if (*err) f.push_back(fmt::format("{}=\"{}\"", key, **err));
  if (f.empty()) f.push_back("no figures");
  return f;
}

}  // namespace

bool has_round_trip(const RowResult& r) {
  for (const Leg& l : r.legs)
    if (l.read_ok && l.write_ok) return true;
  return false;
}

RowMeasure row_measure(const RowResult& verdict, const RowResult& measuring) {
  RowMeasure out{.run_status = measuring.verdict.status};
  if (!measuring.measure) {
    out.error = measuring.verdict.why.empty() ? std::string("the measuring run sent no figures") : measuring.verdict.why;
    return out;
  }
  const Measurement& m = measuring.measure->figures;
  out.figures = m;
  out.figures.legs.clear();
  for (const Leg& l : verdict.legs) {
    if (!(l.read_ok && l.write_ok)) continue;  // only legs that round-tripped where the verdict was decided
    auto it = m.legs.find(l.name);
    out.figures.legs[l.name] = it != m.legs.end() ? it->second : LegFigures{};
  }
  return out;
}

std::string measure_line(const RowMeasure& rm) {
  if (rm.error) return "  measure: no figures: " + *rm.error;
  const Measurement& m = rm.figures;
  std::vector<std::string> parts;
  for (const auto& [name, leg] : m.legs)
    parts.push_back(fmt::format("{}: {}", name, fmt::join(leg_parts(leg, m.baseline, m.pcie_link), " ")));
  visit_route_fields(
      [&](const char* key, const auto& value) {
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::optional<Figure>>) {
          std::string label(key);
          label.resize(label.size() - 3);  // every route figure is a *_us latency
          if (std::string v = fig(value, " us"); !v.empty()) parts.push_back(fmt::format("{}={}", label, v));
        }
      },
      m.route);
  // Legs that only time calls (export, import) move no bytes, so a size of 0 says nothing.
  const std::uint64_t mib = m.size >> 20;
  return fmt::format("  measure: {}; {}median [min-max] of {}", fmt::join(parts, "; "),
                     mib > 0 ? fmt::format("{} MiB, ", mib) : std::string(), m.repeats);
}

}  // namespace extmem::probe
