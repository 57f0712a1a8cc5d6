// The --prometheus textfile: Prometheus text exposition format 0.0.4, as
// node_exporter's textfile collector reads it (one HELP and TYPE per family,
// then its samples; label values escaped).
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "extmem/probe/failure_codes.h"
#include "extmem/probe/fleet_write.h"

namespace extmem::probe {
namespace {

// Label values escape backslash, double quote and line feed, nothing else.
std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

struct Family {
  std::string name, help, samples;
  void add(const std::string& labels, double value) {
    samples += fmt::format("{}{{{}}} {}\n", name, labels, value);
  }
  void add(double value) { samples += fmt::format("{} {}\n", name, value); }
  std::string text() const {
    if (samples.empty()) return {};
    return fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}", name, help, name, samples);
  }
};

// "name" of a measure key: "cpu_write_gbps" -> ("cpu_write", true), "import_us" -> ("import", false).
bool split_figure(const std::string& key, std::string& figure, bool& bandwidth) {
  if (key.ends_with("_gbps")) figure = key.substr(0, key.size() - 5), bandwidth = true;
  else if (key.ends_with("_us")) figure = key.substr(0, key.size() - 3), bandwidth = false;
  else return false;
  return true;
}

}  // namespace

std::string prometheus_text(const Findings& f, const Health& h, double unix_time) {
  const vk::DeviceInfo& dev = f.phase_a.device();
  const std::string device = fmt::format(
      "device=\"{}\",device_uuid=\"{}\",driver=\"{}\",driver_version=\"{}\"", label_value(dev.name),
      label_value(dev.device_uuid), label_value(dev.driver_name), label_value(dev.driver_info));
  Family status{"extmem_probe_row_status",
                "Row status: 0 OK, 1 PARTIAL, 2 FAIL, 3 UNSUPPORTED, 4 SKIP; code is the failure code (docs/failure-codes.md)."};
  Family bandwidth{"extmem_probe_bandwidth_bytes_per_second", "--measure bandwidth, median of the samples, bytes per second."};
  Family latency{"extmem_probe_latency_seconds", "--measure latency, median of the samples, seconds."};
  for (const RowResult& r : f.rows) {
    const FailureCode* code = failure_code(r);
    // A twin's transport is in its name; the plain row is the option's default transport.
    const bool pidfd = r.row.ends_with(kPidfdSuffix);
    const std::string labels = fmt::format("row=\"{}\",code=\"{}\",{},fd_transport=\"{}\"", label_value(r.row),
                                           code ? code->id : "", device, pidfd ? "pidfd" : "scm");
    status.add(labels, static_cast<int>(r.verdict.status));
    if (!r.measure) continue;
    // Every figure of `leg` ("" for the route's), in key order.
    auto figures = [&](const std::string& leg) {
      return [&, leg](const char* key, const auto& value) {
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::optional<Figure>>) {
          std::string figure;
          bool is_bandwidth = false;
          if (!value || value->n == 0 || !split_figure(key, figure, is_bandwidth)) return;
          const std::string l = fmt::format("row=\"{}\",leg=\"{}\",figure=\"{}\",{}", label_value(r.row),
                                            label_value(leg), label_value(figure), device);
          if (is_bandwidth) bandwidth.add(l, value->median * 1e9);  // GB/s = 1e9 bytes per second
          else latency.add(l, value->median * 1e-6);
        }
      };
    };
    for (const auto& [leg, set] : r.measure->figures.legs) visit_fields(figures(leg), set);
    visit_route_fields(figures(""), r.measure->figures.route);
  }
  Family health{"extmem_probe_health", "1 when the run is healthy (required rows OK, no baseline difference), else 0."};
  health.add(h.ok ? 1 : 0);
  Family problems{"extmem_probe_health_problems", "Problems of the run's health (docs/fleet.md)."};
  problems.add(static_cast<double>(h.problems.size()));
  Family when{"extmem_probe_run_timestamp_seconds", "When the run ended, Unix time in seconds."};
  when.samples = fmt::format("extmem_probe_run_timestamp_seconds {:.3f}\n", unix_time);
  Family took{"extmem_probe_run_duration_seconds", "Wall time of the run, seconds."};
  took.samples = fmt::format("extmem_probe_run_duration_seconds {:.3f}\n", f.seconds);
  return status.text() + bandwidth.text() + latency.text() + health.text() + problems.text() + when.text() + took.text();
}

}  // namespace extmem::probe
