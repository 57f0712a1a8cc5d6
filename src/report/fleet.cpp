#include "extmem/report/report.h"
#include "report/key_figures.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "extmem/os/file.h"
#include "extmem/probe/probe.h"

namespace extmem::report {
namespace {

using nlohmann::json;

Error bad(const std::string& file, std::string detail) {
  return Error{file, ErrorKind::invalid_argument, {}, std::move(detail)};
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double median_of(const json& leg, const char* key) {
  auto it = leg.find(key);
  if (it == leg.end() || !it->is_object()) return -1;
  auto m = it->find("median");
  return m != it->end() && m->is_number() ? m->get<double>() : -1;
}

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian; Howard Hinnant's well-known algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// "YYYY-MM-DDTHH:MM:SSZ" (what the probe writes) in Unix seconds; nullopt for anything else.
std::optional<std::int64_t> utc_seconds(const std::string& t) {
  static constexpr char kShape[] = "dddd-dd-ddTdd:dd:ddZ";
  if (t.size() != sizeof kShape - 1) return std::nullopt;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (kShape[i] == 'd' ? (t[i] < '0' || t[i] > '9') : t[i] != kShape[i]) return std::nullopt;
  auto num = [&](std::size_t at, std::size_t n) { return std::stoi(t.substr(at, n)); };
  const int y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), s = num(17, 2);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  return days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + s;
}

// The document's "health" object (docs/probe-result.schema.json), checked as strictly as the rows:
// absent is fine (an older document), present must have the fields the report reads, typed.
Result<std::optional<RunHealth>> health_of(const std::string& file, const json& doc) {
  auto it = doc.find("health");
  if (it == doc.end()) return std::optional<RunHealth>();
  const json& h = *it;
  auto problems = h.is_object() ? h.find("problems") : h.end();
  if (!h.is_object() || !h.contains("ok") || !h["ok"].is_boolean() || problems == h.end() || !problems->is_array())
    return bad(file, "\"health\" is not an object with a boolean \"ok\" and an array \"problems\"");
  RunHealth out;
  out.ok = h["ok"].get<bool>();
  out.problems = problems->size();
  if (out.ok != problems->empty())
    return bad(file, fmt::format("\"health\": \"ok\" is {} with {} problem(s)", out.ok, problems->size()));
  for (std::size_t i = 0; i < problems->size(); ++i) {
    const json& p = (*problems)[i];
    const json code = p.is_object() ? p.value("code", json()) : json();
    if (!p.is_object() || str(p, "row").empty() || str(p, "status").empty() || !code.is_object() ||
        str(code, "id").empty() || (p.contains("step") && !p["step"].is_string()))
      return bad(file, fmt::format("health.problems[{}]: \"row\", \"status\" or \"code.id\" missing or not a string", i));
    if (i == 0)
      out.first = fmt::format("{} {} {}{}", str(p, "row"), str(p, "status"), str(code, "id"),
                              str(p, "step").empty() ? std::string() : " at " + str(p, "step"));
  }
  return std::optional<RunHealth>(std::move(out));
}

std::string options_text(const json& o) {
  if (!o.is_object()) return {};
  std::vector<std::string> parts;
  if (o.value("measure", false)) parts.push_back(fmt::format("measure({} MiB)", o.value("measure_size", 0ull) >> 20));
  // What differs from the probe's defaults (extmem/probe/probe.h); an absent field is the default.
  const std::string default_memory_type = probe::to_string(probe::kDefaultMemoryType),
                    default_gl_driver = probe::to_string(probe::kDefaultGlDriver);
  const std::string default_transport = probe::to_string(probe::FdTransportChoice::scm);
  if (std::string mt = o.value("memory_type", default_memory_type); mt != default_memory_type)
    parts.push_back("memory-type=" + mt);
  if (o.value("size", std::uint64_t{probe::kDefaultSize}) != probe::kDefaultSize)
    parts.push_back(fmt::format("size={}", o.value("size", 0ull)));
  if (o.value("regions_at_end", false)) parts.push_back("regions-at-end");
  if (o.value("soak_s", 0.0) > 0) parts.push_back(fmt::format("soak={:g}s", o.value("soak_s", 0.0)));
  if (o.value("no_gles", false)) parts.push_back("no-gles");
  // What selects the rows: runs that differ here are different columns of a fleet report, never one node's history.
  auto list = [&](const char* key) {
    std::vector<std::string> names;
    for (const json& n : o.value(key, json::array())) names.push_back(n.get<std::string>());
    return fmt::format("{}", fmt::join(names, ","));
  };
  if (std::string only = list("only"); !only.empty()) parts.push_back("only=" + only);
  if (std::string groups = list("groups"); !groups.empty()) parts.push_back("groups=" + groups);
  if (std::string t = o.value("fd_transport", default_transport); t != default_transport)
    parts.push_back("fd-transport=" + t);
  if (std::string g = o.value("gl_driver", default_gl_driver); g != default_gl_driver) parts.push_back("gl-driver=" + g);
  if (std::string d = o.value("device", std::string()); !d.empty()) parts.push_back("device=" + d);
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace

std::string key_figures(const json& m) {
  if (!m.is_object()) return {};
  if (m.contains("error")) return "not measured";
  std::vector<std::string> parts;
  const json legs = m.value("legs", json::object());
  // The CPU leg that reads worst against private memory is the one a server would suffer from.
  std::string cpu_leg;
  double worst = 1e300;
  for (const auto& [name, leg] : legs.items()) {
    if (!leg.is_object() || !leg.contains("cpu_read_ratio") || !leg["cpu_read_ratio"].is_number()) continue;
    if (leg["cpu_read_ratio"].get<double>() < worst) {
      worst = leg["cpu_read_ratio"].get<double>();
      cpu_leg = name;
    }
  }
  if (!cpu_leg.empty()) {
    const json& l = legs[cpu_leg];
    parts.push_back(fmt::format("cpu r x{:.2f} w x{:.2f} ({})", l.value("cpu_read_ratio", 0.0),
                                l.value("cpu_write_ratio", 0.0), cpu_leg));
  }
  for (const auto& [name, leg] : legs.items()) {
    double in = median_of(leg, "gpu_in_gbps"), out = median_of(leg, "gpu_out_gbps"), dl = median_of(leg, "gpu_baseline_gbps");
    if (in < 0 || out < 0) continue;
    parts.push_back(fmt::format("gpu in {:.3g} out {:.3g} GB/s{} ({})", in, out,
                                dl >= 0 ? fmt::format(" vs local {:.3g}", dl) : std::string(), name));
    break;  // one GPU leg is enough for a cell; the JSON has them all
  }
  std::vector<std::string> lat;
  const json route = m.value("route", json::object());
  if (route.contains("export_us")) lat.push_back(fmt::format("export {:.3g}", median_of(route, "export_us")));
  for (const auto& [name, leg] : legs.items()) {
    if (median_of(leg, "import_us") >= 0) {
      lat.push_back(fmt::format("import {:.3g}", median_of(leg, "import_us")));
      if (median_of(leg, "map_us") >= 0) lat.push_back(fmt::format("map {:.3g}", median_of(leg, "map_us")));
      break;
    }
  }
  if (!lat.empty()) parts.push_back(fmt::format("{} µs", fmt::join(lat, " ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

namespace {

// nlohmann's what() without its "[json.exception.KIND.ID] " prefix.
std::string reason(const json::exception& e) {
  std::string what = e.what();
  const std::size_t p = what.find("] ");  // error-text: display only
  if (p != std::string::npos) what = what.substr(p + 2);
  return what;
}

// parse_run without the exception handling: nlohmann throws on bad text, on numbers
// too large for any C++ type, and on value() of a field of another type.
Result<Run> parse_document(const std::string& file, const std::string& text);

}  // namespace

Result<Run> parse_run(const std::string& file, const std::string& text) {
  try {
    return parse_document(file, text);
  } catch (const json::parse_error& e) {
    // The text says "parse error at line L, column C: ..."; e.byte is the byte position.
    return bad(file, fmt::format("not JSON (byte {}): {}", e.byte, reason(e)));
  } catch (const json::exception& e) {
    // A number too large for any C++ type, or a field of the wrong type where a figure or option was expected.
    return bad(file, fmt::format("malformed probe document: {}", reason(e)));
  }
}

namespace {

Result<Run> parse_document(const std::string& file, const std::string& text) {
  json doc = json::parse(text);
  if (!doc.is_object() || str(doc, "schema") != "extmem-probe-result")
    return bad(file, "not an extmem probe result: \"schema\" is not \"extmem-probe-result\" (write one with extmem probe --json=FILE)");
  auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer())
    return bad(file, "\"schema_version\" is missing or not an integer");
  const auto v = version->get<long long>();
  if (std::find(std::begin(kSupportedSchemaVersions), std::end(kSupportedSchemaVersions), v) ==
      std::end(kSupportedSchemaVersions))
    return bad(file, fmt::format("schema_version {} is not supported; this extmem reads schema_version {}", v,
                                 fmt::join(kSupportedSchemaVersions, ", ")));
  Run run;
  run.file = file;
  run.generated_at = str(doc, "generated_at");
  if (doc.contains("generated_at")) {
    run.time = utc_seconds(run.generated_at);
    if (!run.time)
      return bad(file, "\"generated_at\" is not a UTC time \"YYYY-MM-DDTHH:MM:SSZ\" (what extmem probe writes)");
  }
  const json context = doc.value("context", json());
  if (context.is_object() && context.contains("hostname") && !context["hostname"].is_string())
    return bad(file, "\"context.hostname\" is not a string");
  run.node = context.is_object() ? str(context, "hostname") : std::string();
  if (run.node.empty()) run.node = file.substr(file.rfind('/') + 1);  // an older document: each file its own node
  auto health = health_of(file, doc);
  if (!health) return health.error();
  run.health = std::move(*health);
  run.options = options_text(doc.value("options", json()));
  if (const json peer = doc.value("peer", json()); peer.is_object()) {
    PeerOf p{str(peer, "run_id"), str(peer, "endpoint"), str(peer, "served_role"), {}};
    for (const json& f : peer.value("boundary", json::array()))
      if (f.is_object()) p.boundary.push_back(str(f, "fact"));
    // A run across a boundary is another column than the same node's single-tree run.
    run.options += fmt::format("{}across={}", run.options.empty() ? "" : " ",
                               p.boundary.empty() ? "none" : fmt::format("{}", fmt::join(p.boundary, ",")));
    run.peer = std::move(p);
  }
  const json vulkan = doc.value("vulkan", json());
  const json devices = vulkan.is_object() ? vulkan.value("devices", json()) : json();
  const json selected = vulkan.is_object() ? vulkan.value("selected", json()) : json();
  if (!devices.is_array() || !selected.is_number_integer() || selected.get<long long>() < 0 ||
      selected.get<long long>() >= static_cast<long long>(devices.size()) || !devices[selected.get<std::size_t>()].is_object())
    return bad(file, "\"vulkan.devices\" / \"vulkan.selected\" missing or do not name a device");
  const json& dev = devices[selected.get<std::size_t>()];
  run.device = str(dev, "name");
  run.device_uuid = str(dev, "device_uuid");
  run.driver_name = str(dev, "driver_name");
  run.driver_info = str(dev, "driver_info");
  run.driver = fmt::format("{} ({})", run.driver_name, run.driver_info);
  auto rows = doc.find("rows");
  if (rows == doc.end() || !rows->is_array()) return bad(file, "\"rows\" is missing or not an array");
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const json& r = (*rows)[i];
    if (!r.is_object() || str(r, "row").empty() || str(r, "status").empty())
      return bad(file, fmt::format("rows[{}]: \"row\" or \"status\" missing or not a string", i));
    Cell c{str(r, "status"), str(r, "why"), key_figures(r.value("measure", json()))};
    run.rows.emplace_back(str(r, "row"), std::move(c));
  }
  return run;
}

}  // namespace

Input split_input(const std::string& arg) {
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || arg.substr(0, eq).find('/') != std::string::npos) return {"", arg};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

namespace {

// A probe's or a server's --json document: some KiB a run, a few MiB for a server's
// sessions; far more is not one (an endless device, a RAM image given by mistake).
constexpr std::size_t kMaxDocumentBytes = 64u << 20;

Result<std::string> read_text(const std::string& path) {
  auto text = os::read_input_file(path, kMaxDocumentBytes);
  if (!text && text.error().detail.empty()) {
    Error e = std::move(text).error();
    e.detail = "cannot be read";
    return e;
  }
  return text;
}

// The sessions of a serve document; refused connections that were no session are left out.
Result<std::vector<ServedSession>> served_sessions(const std::string& file, const json& doc) {
  std::vector<ServedSession> out;
  const json context = doc.value("side_context", json());
  const std::string node = context.is_object() ? str(context, "hostname") : std::string();
  const json sessions = doc.value("sessions", json());
  if (!sessions.is_array()) return bad(file, "\"sessions\" is missing or not an array");
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    const json& s = sessions[i];
    if (!s.is_object() || str(s, "run_id").empty() || !s.value("halves", json()).is_array())
      return bad(file, fmt::format("sessions[{}]: \"run_id\" or \"halves\" missing or of another type", i));
    ServedSession one{file, node, str(doc, "endpoint"), str(s, "run_id"), 0, s["halves"].size(), str(s, "ended"), {}};
    if (const json peer = s.value("peer", json()); peer.is_object()) {
      one.peer_identified = !peer.contains("uid") || !peer["uid"].is_null();
      if (one.peer_identified) one.peer_uid = peer.value("uid", 0u);
    }
    if (const json r = s.value("refused", json()); r.is_object()) one.refused = str(r, "reason") + ": " + str(r, "detail");
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace

Result<Document> parse_document_of(const std::string& file, const std::string& text) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_object() && doc.contains("schema") && doc["schema"] == "extmem-serve-result") {
    try {
      auto served = served_sessions(file, doc);
      if (!served) return std::move(served).error();
      return Document{std::nullopt, std::move(*served)};
    } catch (const json::exception& e) {
      return bad(file, fmt::format("malformed serve document: {}", reason(e)));
    }
  }
  auto run = parse_run(file, text);
  if (!run) return std::move(run).error();
  return Document{std::move(*run), {}};
}

Result<Document> load_document(const std::string& path) {
  auto text = read_text(path);
  if (!text) return std::move(text).error();
  return parse_document_of(path, *text);
}

Result<Run> load_run(const std::string& path) {
  auto text = read_text(path);
  if (!text) return std::move(text).error();
  return parse_run(path, *text);
}

}  // namespace extmem::report
