#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/os/file.h"
#include "extmem/probe/probe.h"
#include "extmem/vulkan/enumerate.h"
#include "probe/parent/cuda_phase_a.h"
#include "probe/parent/junit.h"
#include "probe/worker/measure.h"
#include "probe/parent/measure_row.h"
#include "probe/parent/phase_a.h"
#include "probe/parent/plan.h"
#include "probe/routes.h"
#include "probe/parent/schedule.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

Error usage(std::string option, std::string detail) {
  return Error{std::move(option), ErrorKind::invalid_argument, {}, std::move(detail)};
}

json leg_json(const Leg& l) {
  return {{"name", l.name}, {"decisive", l.decisive}, {"attempted", l.attempted}, {"read_ok", l.read_ok},
          {"write_ok", l.write_ok}, {"value", l.trace_value()}, {"failed_step", l.failed_step}, {"code", l.code},
          {"note", l.note}};
}

json row_json(const RowResult& r) {
  json legs = json::array();
  for (const Leg& l : r.legs) legs.push_back(leg_json(l));
  json j = {{"row", r.row}, {"status", to_string(r.verdict.status)}, {"why", r.verdict.why}, {"trace", trace(r.legs)},
          {"legs", legs}, {"detail", r.detail}, {"seconds", r.seconds},
          {"soak", r.soak ? json{{"stale", r.soak->stale}, {"words", r.soak->words}, {"rounds", r.soak->rounds}} : json(nullptr)},
          {"last_step", {{"server", r.server_step}, {"client", r.client_step}}}};
  if (!r.measure.is_null()) j["measure"] = r.measure;
  return j;
}

// --memory-type as a list of memory type indices to run each exporting row with; -1 = auto (today's row).
// Errors: usage, naming the accepted values and the HOST_VISIBLE types of the device.
Result<std::vector<int>> memory_type_plan(const std::string& value, const vk::DeviceInfo& dev) {
  std::vector<int> host_visible;
  std::string listed;
  for (const auto& t : dev.types)
    if (t.flags & 0x2 /* HOST_VISIBLE */) {
      host_visible.push_back(static_cast<int>(t.index));
      listed += fmt::format("{}{} ({})", listed.empty() ? "" : ", ", t.index, t.flag_names);
    }
  if (value == "auto") return std::vector<int>{-1};
  if (value == "all") {
    std::vector<int> plan{-1};
    plan.insert(plan.end(), host_visible.begin(), host_visible.end());
    return plan;
  }
  int index = -1;
  if (!value.empty() && value.size() <= 2 && value.find_first_not_of("0123456789") == std::string::npos)
    index = std::stoi(value);
  if (index < 0 || std::find(host_visible.begin(), host_visible.end(), index) == host_visible.end())
    return usage("--memory-type", fmt::format("\"{}\" is not accepted: auto, all, or the index of a HOST_VISIBLE memory "
                                              "type of device {}: {}", value, dev.index, listed.empty() ? "none" : listed));
  return std::vector<int>{index};
}

void print_summary(std::ostream& out, const std::vector<RowResult>& rows) {
  out << "\n== summary\n";
  std::size_t width = 4;
  for (const RowResult& r : rows) width = std::max(width, r.row.size());
  out << fmt::format("{:<{}}  {:<11}  {}\n", "row", width, "status", "legs / reason");
  int counts[5] = {};
  for (const RowResult& r : rows) {
    ++counts[static_cast<int>(r.verdict.status)];
    // A row that did not run has only notrun legs; its reason says more than they do.
    bool not_run = r.verdict.status == RowStatus::skip || r.verdict.status == RowStatus::unsupported;
    std::string rest = r.legs.empty() || not_run ? r.verdict.why : trace(r.legs);
    out << fmt::format("{:<{}}  {:<11}  {}\n", r.row, width, to_string(r.verdict.status), rest);
  }
  out << fmt::format("{} OK, {} PARTIAL, {} FAIL, {} UNSUPPORTED, {} SKIP\n", counts[0], counts[1], counts[2],
                     counts[3], counts[4]);
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}


}  // namespace

std::string memory_type_suffix(unsigned index) { return fmt::format("@mt{}", index); }

std::string result_line(const RowResult& r) {
  std::string line = fmt::format("RESULT {} {}", r.row, to_string(r.verdict.status));
  if (!r.legs.empty()) line += " " + trace(r.legs);
  if (!r.verdict.why.empty()) line += " why: " + r.verdict.why;
  std::vector<std::string> detail = r.detail;
  for (const Leg& l : r.legs) {
    std::string text = l.failed_step.empty() ? "" : l.failed_step + (l.code.empty() ? "" : " -> " + l.code);
    if (!l.note.empty()) text += (text.empty() ? "" : " ") + l.note;
    // Informational legs never reach why:, so their failures are told here.
    if (!text.empty() && r.verdict.why.find(text) == std::string::npos) detail.push_back(l.name + ": " + text);
  }
  if (!detail.empty()) line += fmt::format(" | {}", fmt::join(detail, "; "));
  return line;
}

int run(const ProbeOptions& o, std::ostream& out, std::ostream& err) {
  if (auto v = validate(o); !v) {
    err << "extmem probe: " << v.error().step << ": " << v.error().detail << "\n";
    return kExitUsage;
  }
  RunContext context = read_run_context();
  auto vulkan = vk::enumerate();
  if (!vulkan) {
    err << "extmem probe: cannot run: " << vulkan.error().message() << "\n";
    return kExitCannotRun;
  }
  auto selected = vk::select_device(vulkan->devices, o.device);
  if (!selected) {
    err << "extmem probe: " << selected.error().message() << "\n";
    return selected.error().kind == ErrorKind::invalid_argument ? kExitUsage : kExitCannotRun;
  }
  if (o.list_devices) {
    print_vulkan(out, *vulkan, static_cast<int>(*selected), true);
    return kExitOk;
  }
  // --size must fit the largest heap that has a host-visible memory type.
  const vk::DeviceInfo& dev = vulkan->devices[*selected];
  std::uint64_t largest = 0;
  for (const auto& t : dev.types)
    if (t.flags & 0x2 /* HOST_VISIBLE */) largest = std::max(largest, dev.heaps[t.heap_index].size);
  if (o.size > largest) {
    err << fmt::format("extmem probe: --size: {} bytes does not fit the largest host-visible heap of device {} ({} bytes); "
                       "accepted: a multiple of 4096 from {} to {}\n", o.size, *selected, largest, kMinSize, largest);
    return kExitUsage;
  }
  if (o.measure && o.measure_size > largest) {
    err << fmt::format("extmem probe: --measure-size: {} bytes does not fit the largest host-visible heap of device {} "
                       "({} bytes); accepted: a multiple of 4096 from 1048576 to {}\n", o.measure_size, *selected,
                       largest, std::min<std::uint64_t>(largest, 1u << 30));
    return kExitUsage;
  }
  auto plan = memory_type_plan(o.memory_type, dev);
  if (!plan) {
    err << "extmem probe: " << plan.error().step << ": " << plan.error().detail << "\n";
    return kExitUsage;
  }

  print_context(out, context);
  print_vulkan(out, *vulkan, static_cast<int>(*selected), false);
  auto gles_info = gles::enumerate();
  print_gles(out, gles_info, dev);
  auto cuda_info = cuda::enumerate();
  print_cuda(out, cuda_info, dev.device_uuid);
  out << fmt::format("== routes (size={} bytes, regions at {}, timeout={:g} s{}{}{})\n", o.size,
                     o.regions_at_end ? "end" : "start", o.timeout_s,
                     o.soak_s > 0 ? fmt::format(", soak={:g} s", o.soak_s) : std::string(),
                     o.measure ? fmt::format(", measure={} bytes x {}", o.measure_size, o.measure_repeats) : std::string(),
                     o.memory_type != "auto" ? ", memory-type=" + o.memory_type : std::string());
  out.flush();

  SuperviseParams params;
  params.exe = o.self_exe;
  params.device_index = *selected;
  params.layout = Layout{o.size, o.regions_at_end};
  params.timeout_s = o.timeout_s;
  params.soak_s = o.soak_s;

  // The plan: one row per route, and per memory type for the rows whose exporter picks
  // its memory; the rows phase A can answer are decided here and start no process.
  std::vector<PlannedRow> planned = plan_rows(o, *plan, PhaseAFacts{&dev, &cuda_info});
  EngineOptions engine;
  engine.base = params;
  engine.measure = o.measure;
  engine.measure_size = o.measure_size;
  engine.measure_repeats = o.measure_repeats;
  engine.jobs = o.measure || o.soak_s > 0 ? 1 : (o.jobs == 0 ? default_jobs() : o.jobs);
  engine.isolate_route = o.isolate == "route";
  auto executed = execute_rows(planned, engine, [&](const RowResult& r) {
    out << result_line(r) << "\n";
    if (std::string m = measure_line(r.measure); !m.empty()) out << m << "\n";
    out.flush();
  });
  if (!executed) {
    err << "extmem probe: cannot start the route children: " << executed.error().message() << "\n";
    return kExitCannotRun;
  }
  const std::vector<RowResult>& rows = *executed;
  print_summary(out, rows);

  bool failed = std::any_of(rows.begin(), rows.end(), [](const RowResult& r) {
    return r.verdict.status == RowStatus::fail || r.verdict.status == RowStatus::partial;
  });
  int code = failed ? kExitFailed : kExitOk;
  if (!o.json_path.empty()) {
    json jrows = json::array();
    for (const RowResult& r : rows) jrows.push_back(row_json(r));
    json doc = {{"schema", "extmem-probe-result"},
                {"schema_version", kJsonSchemaVersion},
                {"tool_version", "0.1.0"},
                {"generated_at", utc_now()},
                {"options",
                 {{"size", o.size}, {"regions_at_end", o.regions_at_end}, {"timeout_s", o.timeout_s}, {"soak_s", o.soak_s},
                  {"device", o.device}, {"only", o.only}, {"groups", o.groups},
                  {"no_gles", std::find(o.excluded_groups.begin(), o.excluded_groups.end(), "gles") != o.excluded_groups.end()},
                  {"memory_type", o.memory_type}, {"measure", o.measure}, {"measure_size", o.measure_size},
                  {"measure_repeats", o.measure_repeats}}},
                {"context", to_json(context)},
                {"vulkan", to_json(*vulkan, static_cast<int>(*selected))},
                {"gles", to_json(gles_info, dev)},
                {"cuda", to_json(cuda_info, dev.device_uuid)},
                {"rows", jrows},
                {"exit_code", code}};
    if (auto s = os::write_file_atomically(o.json_path, doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
        !s) {
      err << "extmem probe: " << s.error().message() << "\n";
      return kExitCannotRun;
    }
  }
  if (!o.junit_path.empty()) {
    if (auto s = os::write_file_atomically(o.junit_path, junit_xml(rows, dev.name)); !s) {
      err << "extmem probe: " << s.error().message() << "\n";
      return kExitCannotRun;
    }
  }
  return code;
}

}  // namespace extmem::probe
