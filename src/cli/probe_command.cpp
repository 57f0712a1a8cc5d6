// `extmem probe`: option parsing only; the work is in extmem::probe.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "extmem/probe/probe.h"
#include "probe/worker/worker_main.h"

namespace extmem::cli {
namespace {

std::vector<std::string> split_rows(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    std::size_t start = 0;
    while (start <= v.size()) {
      std::size_t comma = v.find(',', start);
      std::string part = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      out.push_back(part);  // an empty name (--only= or "a,,b") is refused by validate(), not taken as "every row"
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace

namespace {
Runner add_probe(CLI::App& app);
const Registration registered{add_probe};

Runner add_probe(CLI::App& app) {
  struct State {
    probe::ProbeOptions options;
    std::vector<std::string> only;
    bool only_t0 = false, only_t1 = false, only_t3 = false, only_gles = false;
    std::string child;
    probe::ChildArgs child_args;
    bool worker = false;
    std::vector<std::string> warm;
    std::string worker_device;
    bool worker_select = false;
    bool phase_a = false;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand("probe", "Which memory-sharing routes work on this device, and do they really alias?");
  probe::ProbeOptions& o = state->options;
  // CLI11 would wrap "-4096" around to a huge unsigned value and say only "could not convert" for "abc".
  const CLI::Validator bytes(
      [](std::string& v) -> std::string {
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 19)
          return "\"" + v + "\" is not accepted: a number of bytes, a multiple of 4096 and at least 32768";
        return {};
      },
      "BYTES");
  const CLI::Validator seconds(
      [](std::string& v) -> std::string {
        char* end = nullptr;
        double d = std::strtod(v.c_str(), &end);
        if (v.empty() || end == nullptr || *end != '\0' || !(d > 0 && d <= 3600))
          return "\"" + v + "\" is not accepted: seconds, a number greater than 0 and at most 3600";
        return {};
      },
      "SECONDS");
  cmd->add_option("--size", o.size, "Shared allocation in bytes: a multiple of 4096, at least 32768, fitting the heap")
      ->check(bytes)
      ->capture_default_str();
  cmd->add_flag("--regions-at-end", o.regions_at_end, "Place the 4 KiB verification regions in the last 32 KiB");
  cmd->add_option("--only", state->only, "Run only these rows (comma-separated row names)")->delimiter(',');
  cmd->add_flag("--only-t0", state->only_t0, "Run only the T0 (Android AHardwareBuffer) rows");
  cmd->add_flag("--only-t1", state->only_t1, "Run only the T1 (Vulkan export) rows");
  cmd->add_flag("--only-t3", state->only_t3, "Run only the T3 (host memory) rows");
  cmd->add_flag("--only-gles", state->only_gles, "Run only the GLES rows");
  cmd->add_flag("--no-gles", o.no_gles, "Skip the GLES rows");
  cmd->add_option("--timeout", o.timeout_s, "Per-route limit in seconds (0 < T <= 3600)")
      ->check(seconds)
      ->capture_default_str();
  cmd->add_option("--soak", o.soak_s, "Repeat each OK route's round trip this many seconds, counting stale words")
      ->check(seconds);
  cmd->add_flag("--measure", o.measure,
                "Per round-tripped leg: CPU and GPU bandwidth vs private/device-local memory, export/import/map latency");
  cmd->add_option("--measure-size", o.measure_size, "Bytes of the measured allocation: a multiple of 4096, 1 MiB to 1 GiB")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 19)
              return "\"" + v + "\" is not accepted: a number of bytes, a multiple of 4096 from 1048576 to 1073741824";
            return {};
          },
          "BYTES"))
      ->capture_default_str();
  cmd->add_option("--measure-repeats", o.measure_repeats, "Samples per figure (1..100); the median and min/max are reported")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos)
              return "\"" + v + "\" is not accepted: a whole number from 1 to 100";
            return {};
          },
          "N"))
      ->capture_default_str();
  cmd->add_option("--memory-type", o.memory_type,
                  "Memory type the exporting rows allocate from: auto, all (one row per HOST_VISIBLE type), or INDEX")
      ->capture_default_str();
  cmd->add_option("--junit", o.junit_path, "Write one JUnit testcase per row to FILE")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // Empty would read as "not given": the run would write no JUnit file and say nothing.
            return v.empty() ? "the path is empty; accepted: a file path in an existing, writable directory" : "";
          },
          "FILE"));
  cmd->add_option("--json", o.json_path, "Write the whole run as JSON (schema docs/probe-result.schema.json)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // Empty would read as "not given": the run would write no JSON and say nothing.
            return v.empty() ? "the path is empty; accepted: a file path in an existing, writable directory" : "";
          },
          "FILE"));
  cmd->add_option("--device", o.device, "Physical device: INDEX, deviceUUID or NAME-SUBSTRING (default: first GPU)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // Empty would read as "not given" and silently pick the default device.
            return v.empty() ? "the device is empty; accepted: INDEX, deviceUUID (32 hex digits) or NAME-SUBSTRING" : "";
          },
          "DEVICE"));
  cmd->add_option("--jobs", o.jobs, "Routes run side by side, 1..64 (default: from the cores and memory available)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.empty() || v.size() > 2 || v.find_first_not_of("0123456789") != std::string::npos || v == "0" || v == "00")
              return "\"" + v + "\" is not accepted: a whole number from 1 to 64";
            return {};
          },
          "N"));
  cmd->add_option("--isolate", o.isolate, "route: fresh processes for every route; none: warm workers (default)")
      ->capture_default_str();
  cmd->add_flag("--list-devices", o.list_devices, "List the Vulkan physical devices and exit");
  // Child mode: started by the probe itself with its sockets on fds 3 and 4.
  cmd->add_option("--child", state->child)->group("");
  cmd->add_option("--role", state->child_args.role)->group("");
  cmd->add_option("--device-index", state->child_args.device_index)->group("");
  cmd->add_option("--memory-type-index", state->child_args.memory_type)->group("");
  // Worker mode: a warm process started by the probe itself with its control socket on fd 3.
  cmd->add_flag("--worker", state->worker)->group("");
  cmd->add_option("--warm", state->warm)->group("");
  cmd->add_flag("--worker-select", state->worker_select)->group("");
  cmd->add_option("--worker-device", state->worker_device)->group("");
  cmd->add_flag("--phase-a", state->phase_a)->group("");

  return [state]() -> int {
    probe::ProbeOptions& opts = state->options;
    if (state->worker) {
      probe::WorkerArgs w;
      w.device_index = state->child_args.device_index;
      if (state->worker_select) w.select = state->worker_device;
      w.phase_a = state->phase_a;
      for (const std::string& d : state->warm) {
        w.warm_gl = w.warm_gl || d == "gl";
        w.warm_cuda = w.warm_cuda || d == "cuda";
      }
      return probe::run_worker(w);
    }
    if (!state->child.empty()) {
      state->child_args.row = state->child;
      state->child_args.size = opts.size;
      state->child_args.regions_at_end = opts.regions_at_end;
      state->child_args.soak_s = opts.soak_s;
      state->child_args.measure = opts.measure;
      state->child_args.measure_repeats = opts.measure_repeats;
      return probe::run_child(state->child_args);
    }
    opts.only = split_rows(state->only);
    if (state->only_t0) opts.groups.push_back("t0");
    if (state->only_t1) opts.groups.push_back("t1");
    if (state->only_t3) opts.groups.push_back("t3");
    if (state->only_gles) opts.groups.push_back("gles");
    return probe::run(opts, std::cout, std::cerr);
  };
}
}  // namespace

}  // namespace extmem::cli
