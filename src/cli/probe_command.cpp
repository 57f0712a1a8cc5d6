// `extmem probe`: option parsing only; the work is in extmem::probe.
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/routes.h"
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
    std::vector<probe::GroupInfo> groups = probe::groups();
    std::deque<bool> only_group, no_group;  // one flag each per group, in groups() order (deque: real bool&)
    std::string child;
    std::string list_routes;  // hidden --list-routes=json|markdown: the route table (tests, README)
    std::map<std::string, std::string> text;                    // each valued option's text, as given
    std::vector<std::pair<std::string, CLI::Option*>> valued;   // in --help order
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
  // Every option with a value is taken as text and handed to probe::parse_option,
  // so a refusal is in the library's words whether the text is not a number or
  // out of range (validate()); CLI11's own conversions would wrap "-4096" around
  // and say only "could not convert" for "abc".
  auto valued = [&](const std::string& name, const std::string& type, const std::string& help,
                    const std::string& shown_default) {
    CLI::Option* opt = cmd->add_option(name, state->text[name], help)->type_name(type);
    if (!shown_default.empty()) opt->default_str(shown_default);
    state->valued.emplace_back(name, opt);
  };
  valued("--size", "BYTES", "Shared allocation in bytes: a multiple of 4096, at least 32768, fitting the heap", "65536");
  cmd->add_flag("--regions-at-end", o.regions_at_end, "Place the 4 KiB verification regions in the last 32 KiB");
  cmd->add_option("--only", state->only, "Run only these rows (comma-separated row names)")->delimiter(',');
  // The group flags come from the route table's groups: --only-GROUP for each, --no-GROUP where excludable.
  state->only_group.assign(state->groups.size(), false);
  state->no_group.assign(state->groups.size(), false);
  for (std::size_t i = 0; i < state->groups.size(); ++i)
    cmd->add_flag("--only-" + state->groups[i].name, state->only_group[i], "Run only " + state->groups[i].rows);
  for (std::size_t i = 0; i < state->groups.size(); ++i)
    if (state->groups[i].excludable)
      cmd->add_flag("--no-" + state->groups[i].name, state->no_group[i], "Skip " + state->groups[i].rows);
  valued("--timeout", "SECONDS", "Per-route limit in seconds (0 < T <= 3600)", "60");
  valued("--soak", "SECONDS", "Repeat each OK route's round trip this many seconds, counting stale words", "");
  cmd->add_flag("--measure", o.measure,
                "Per round-tripped leg: CPU and GPU bandwidth vs private/device-local memory, export/import/map latency");
  valued("--image-size", "WxH", "Texels of the image rows' shared image, each side 1..maxImageDimension2D", "256x256");
  valued("--measure-size", "BYTES", "Bytes of the measured allocation: a multiple of 4096, 1 MiB to 1 GiB", "67108864");
  valued("--measure-repeats", "N", "Samples per figure (1..100); the median and min/max are reported", "7");
  valued("--memory-type", "auto|all|INDEX",
         "Memory type the exporting rows allocate from: auto, all (one row per HOST_VISIBLE type), or INDEX", "auto");
  valued("--junit", "FILE", "Write one JUnit testcase per row to FILE", "");
  valued("--json", "FILE", "Write the whole run as JSON (schema docs/probe-result.schema.json)", "");
  valued("--device", "DEVICE", "Physical device: INDEX, deviceUUID or NAME-SUBSTRING (default: first GPU)", "");
  valued("--jobs", "N", "Routes run side by side, 1..64 (at most one per CPU and per 512 MiB available); 0 or absent: 1", "");
  valued("--isolate", "none|route", "route: fresh processes for every route; none: warm workers (default)", "none");
  cmd->add_flag("--list-devices", o.list_devices, "List the Vulkan physical devices and exit");
  cmd->add_option("--list-routes", state->list_routes)->group("");
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
    for (const auto& [name, opt] : state->valued) {
      if (opt->count() == 0) continue;
      if (auto s = probe::parse_option(opts, name, state->text[name]); !s) {
        std::cerr << "extmem probe: " << s.error().step << ": " << s.error().detail << "\n";
        return probe::kExitUsage;
      }
    }
    if (!state->child.empty()) {
      state->child_args.row = state->child;
      state->child_args.size = opts.size;
      state->child_args.regions_at_end = opts.regions_at_end;
      state->child_args.soak_s = opts.soak_s;
      state->child_args.measure = opts.measure;
      state->child_args.measure_repeats = opts.measure_repeats;
      state->child_args.image_width = opts.image_width;
      state->child_args.image_height = opts.image_height;
      return probe::run_child(state->child_args);
    }
    if (!state->list_routes.empty()) {
      if (state->list_routes == "json") std::cout << probe::routes_json();
      else if (state->list_routes == "markdown") std::cout << probe::routes_markdown();
      else {
        std::cerr << "extmem probe: --list-routes: \"" << state->list_routes << "\" is not accepted: json or markdown\n";
        return probe::kExitUsage;
      }
      return probe::kExitOk;
    }
    opts.only = split_rows(state->only);
    for (std::size_t i = 0; i < state->groups.size(); ++i) {
      if (state->only_group[i]) opts.groups.push_back(state->groups[i].name);
      if (state->no_group[i]) opts.excluded_groups.push_back(state->groups[i].name);
    }
    return probe::run(opts, std::cout, std::cerr);
  };
}
}  // namespace

}  // namespace extmem::cli
