#include "probe/parent/measure_row.h"

#include <string_view>
#include <tuple>

#include <fmt/format.h>

namespace extmem::probe {
namespace {

using nlohmann::json;

// "12.3 [11.9-12.6]" for a figure object; "" when it has no samples.
std::string fig(const json& f, const char* unit) {
  if (!f.is_object() || f.value("n", 0) == 0) return {};
  return fmt::format("{:.3g}{} [{:.3g}-{:.3g}]", f.value("median", 0.0), unit, f.value("min", 0.0), f.value("max", 0.0));
}

}  // namespace

bool has_round_trip(const RowResult& r) {
  for (const Leg& l : r.legs)
    if (l.read_ok && l.write_ok) return true;
  return false;
}

json row_measure(const RowResult& verdict, const RowResult& measuring) {
  json out = json::object();
  out["run_status"] = to_string(measuring.verdict.status);
  const json& m = measuring.measure;
  if (!m.is_object()) {
    out["error"] = measuring.verdict.why.empty() ? std::string("the measuring run sent no figures") : measuring.verdict.why;
    return out;
  }
  out["size"] = m.value("size", 0);
  out["repeats"] = m.value("repeats", 0);
  out["baseline"] = m.value("baseline", json::object());
  out["route"] = m.value("route", json::object());
  if (m.contains("pcie_link")) out["pcie_link"] = m["pcie_link"];
  json legs = json::object();
  const json all = m.value("legs", json::object());
  for (const Leg& l : verdict.legs) {
    if (!(l.read_ok && l.write_ok)) continue;  // only legs that round-tripped where the verdict was decided
    auto it = all.find(l.name);
    legs[l.name] = it != all.end() && it->is_object() ? *it : json::object();
  }
  out["legs"] = legs;
  return out;
}

std::string measure_line(const json& m) {
  if (!m.is_object()) return {};
  if (m.contains("error")) return "  measure: no figures: " + m.value("error", std::string());
  std::vector<std::string> parts;
  const json base = m.value("baseline", json::object()), legs = m.value("legs", json::object()),
             route = m.value("route", json::object());
  for (auto it = legs.begin(); it != legs.end(); ++it) {
    const std::string& name = it.key();
    const json& e = it.value();  // a named reference: clang 14 cannot capture structured bindings in lambdas
    std::vector<std::string> f;
    auto cpu = [&](const char* key, const char* ratio, const char* base_key, const char* label) {
      std::string v = fig(e.value(key, json()), " GB/s");
      if (v.empty()) return;
      if (e.contains(ratio))
        v += fmt::format(" (x{:.2f} of private {})", e.value(ratio, 0.0), fig(base.value(base_key, json()), " GB/s"));
      f.push_back(fmt::format("{}={}", label, v));
    };
    cpu("cpu_write_gbps", "cpu_write_ratio", "cpu_write_gbps", "cpu-write");
    cpu("cpu_read_gbps", "cpu_read_ratio", "cpu_read_gbps", "cpu-read");
    // GPU figures name their clock (shader-*: the same copies by a compute shader); copies in and out of shared memory that is host memory
    // (gpu_shared_memory, set by the route) are printed beside the PCIe link's theoretical rate.
    const json link = m.value("pcie_link", json::object());
    for (auto [key, label, unit] : {std::tuple{"gpu_out_gbps", "gpu-out", " GB/s"}, std::tuple{"gpu_in_gbps", "gpu-in", " GB/s"},
                                    std::tuple{"gpu_baseline_gbps", "gpu-device-local", " GB/s"},
                                    std::tuple{"shader_out_gbps", "shader-out", " GB/s"},
                                    std::tuple{"shader_in_gbps", "shader-in", " GB/s"},
                                    std::tuple{"shader_baseline_gbps", "shader-device-local", " GB/s"},
                                    std::tuple{"import_us", "import", " us"}, std::tuple{"map_us", "map", " us"}}) {
      const json fj = e.value(key, json());
      std::string v = fig(fj, unit);
      if (v.empty()) continue;
      if (fj.contains("clock")) v += fmt::format(" ({})", fj.value("clock", std::string()));
      if (link.contains("gbps") && e.value("gpu_shared_memory", std::string()) == "host" &&
          !std::string_view(key).ends_with("_baseline_gbps") && std::string_view(unit) == " GB/s")
        v += fmt::format(" [PCIe x{} {:.3g} GT/s: {:.3g} GB/s]", link.value("width", 0), link.value("speed_gts", 0.0),
                         link.value("gbps", 0.0));
      f.push_back(fmt::format("{}={}", label, v));
    }
    // Image copies through the shared image, each beside the same copy through a private image
    // (T4 image rows, docs/probe.md "T4 image rows").
    for (auto [key, base_key, ratio, label] :
         {std::tuple{"image_out_gbps", "image_private_out_gbps", "image_out_ratio", "image-out"},
          std::tuple{"image_in_gbps", "image_private_in_gbps", "image_in_ratio", "image-in"}}) {
      const json fj = e.value(key, json());
      std::string v = fig(fj, " GB/s");
      if (v.empty()) continue;
      if (fj.contains("clock")) v += fmt::format(" ({})", fj.value("clock", std::string()));
      if (e.contains(ratio))
        v += fmt::format(" (x{:.2f} of private {})", e.value(ratio, 0.0), fig(e.value(base_key, json()), " GB/s"));
      f.push_back(fmt::format("{}={}", label, v));
    }
    if (e.contains("image_copies_per_sample"))
      f.push_back(fmt::format("image={} copies-per-sample={}", e.value("image_extent", std::string("?")),
                              e.value("image_copies_per_sample", 0)));
    for (const char* err : {"gpu_error", "shader_error", "import_error", "map_error", "gpu_clock_fallback",
                            "image_error", "image_restore_error"})
      if (e.contains(err)) f.push_back(fmt::format("{}=\"{}\"", err, e.value(err, std::string())));
    if (f.empty()) f.push_back("no figures");
    parts.push_back(fmt::format("{}: {}", name, fmt::join(f, " ")));
  }
  for (const auto& [key, f] : route.items()) {
    std::string label = key.size() > 3 && key.ends_with("_us") ? key.substr(0, key.size() - 3) : key;
    std::string v = fig(f, " us");
    if (!v.empty()) parts.push_back(fmt::format("{}={}", label, v));
  }
  // Legs that only time calls (export, import) move no bytes, so a size of 0 says nothing.
  std::size_t mib = m.value("size", std::size_t{0}) >> 20;
  return fmt::format("  measure: {}; {}median [min-max] of {}", fmt::join(parts, "; "),
                     mib > 0 ? fmt::format("{} MiB, ", mib) : std::string(), m.value("repeats", 0));
}

}  // namespace extmem::probe
