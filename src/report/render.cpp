// Markdown and HTML forms of the fleet matrix (fleet.h).
#include <algorithm>
#include <tuple>
#include <map>

#include <fmt/format.h>

#include "extmem/probe/routes.h"
#include "report/fleet.h"
#include "core/xml_text.h"

namespace extmem::report {
namespace {

// Row names of all runs, each once, in the probe's route table order with each
// --memory-type twin right under its row ("T1-opaque-fd@mt2" after
// "T1-opaque-fd", twins by memory type index); rows this build's table does not
// know (a document from another version) follow, in the order first seen.
std::vector<std::string> row_union(const std::vector<Run>& runs) {
  std::vector<std::string> names;
  for (const Run& r : runs)
    for (const auto& [name, cell] : r.rows)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::map<std::string, std::size_t> table_index;
  for (const probe::RouteInfo& route : probe::routes()) table_index.emplace(route.row, table_index.size());
  // An --fd-transport twin ("…@pidfd") right after the row it shares its memory type with,
  // whichever document showed it first.
  auto key = [&](const std::string& name) {
    auto it = table_index.find(probe::base_row(name));
    const std::size_t base = it == table_index.end() ? table_index.size() : it->second;
    const bool known = it != table_index.end();
    return std::tuple<std::size_t, int, bool>(base, known ? probe::twin_memory_type(name) : 0,
                                              known && probe::is_pidfd_twin(name));
  };
  std::stable_sort(names.begin(), names.end(),
                   [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  return names;
}

const Cell* find_cell(const Run& run, const std::string& row) {
  for (const auto& [name, cell] : run.rows)
    if (name == row) return &cell;
  return nullptr;
}

std::string basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Markdown table cells: no raw '|' or newline.
std::string md(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}


std::string status_class(const std::string& status) {
  if (status == "OK") return "ok";
  if (status == "PARTIAL") return "partial";
  if (status == "FAIL") return "fail";
  if (status == "UNSUPPORTED") return "unsupported";
  return "skip";
}

}  // namespace

std::string markdown(const std::vector<Run>& runs) {
  std::string s = "# extmem probe: device × row matrix\n\n";
  s += "| row |";
  std::string rule = "|---|";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    s += fmt::format(" [{}] {} |", i + 1, md(runs[i].device));
    rule += "---|";
  }
  s += "\n" + rule + "\n";
  for (const std::string& row : row_union(runs)) {
    s += "| " + md(row) + " |";
    for (const Run& run : runs) {
      const Cell* c = find_cell(run, row);
      if (c == nullptr) {
        s += " — |";
        continue;
      }
      s += " **" + md(c->status) + "**";
      if (!c->figures.empty()) s += "<br>" + md(c->figures);
      s += " |";
    }
    s += "\n";
  }
  s += "\nRuns:\n\n";
  for (std::size_t i = 0; i < runs.size(); ++i)
    s += fmt::format("{}. `{}`: {}, driver {}, {}{}\n", i + 1, md(basename(runs[i].file)), md(runs[i].device),
                     md(runs[i].driver), runs[i].generated_at,
                     runs[i].options.empty() ? std::string() : ", options: " + md(runs[i].options));
  s += "\nFigures (from `--measure`): `cpu r/w xN` = CPU read/write bandwidth through the shared mapping divided by "
       "private memory in the same process (the leg with the lowest read ratio); `gpu in/out` = GPU copies into / out of "
       "the shared allocation (vkCmdCopyBuffer, cuMemcpyDtoD or glCopyBufferSubData by leg), GB/s, vs device-local "
       "to device-local; latencies are medians in µs.\n";
  return s;
}

std::string html(const std::vector<Run>& runs) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>extmem probe: device × row matrix</title>\n<style>\n"
      "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1b1f24;background:#fff}\n"
      "h1{font-size:20px;margin:0 0 12px}\n"
      "table{border-collapse:collapse;font-size:13px}\n"
      "th,td{border:1px solid #d0d7de;padding:6px 8px;vertical-align:top;text-align:left}\n"
      "th{background:#f6f8fa}\n"
      "td.row{font-family:ui-monospace,monospace;white-space:nowrap}\n"
      ".st{font-weight:700;display:inline-block;padding:1px 6px;border-radius:4px}\n"
      ".ok .st{background:#dafbe1;color:#116329}.fail .st{background:#ffebe9;color:#a40e26}\n"
      ".partial .st{background:#fff8c5;color:#7d4e00}.unsupported .st{background:#eaeef2;color:#424a53}\n"
      ".skip .st{background:#f6f8fa;color:#6e7781}\n"
      ".fig{font-family:ui-monospace,monospace;font-size:12px;color:#424a53;margin-top:3px}\n"
      ".why{font-size:11px;color:#6e7781;margin-top:3px;max-width:28em}\n"
      "td.none{color:#8c959f;text-align:center}\n"
      "ol{font-size:13px}\n"
      "</style>\n</head>\n<body>\n<h1>extmem probe: device × row matrix</h1>\n<table>\n<tr><th>row</th>";
  for (std::size_t i = 0; i < runs.size(); ++i)
    s += fmt::format("<th>[{}] {}<br><small>{}</small></th>", i + 1, xml_text(runs[i].device), xml_text(basename(runs[i].file)));
  s += "</tr>\n";
  for (const std::string& row : row_union(runs)) {
    s += "<tr><td class=\"row\">" + xml_text(row) + "</td>";
    for (const Run& run : runs) {
      const Cell* c = find_cell(run, row);
      if (c == nullptr) {
        s += "<td class=\"none\">—</td>";
        continue;
      }
      s += fmt::format("<td class=\"{}\"><span class=\"st\"{}>{}</span>", status_class(c->status),
                       c->why.empty() ? std::string() : " title=\"" + xml_text(c->why) + "\"", xml_text(c->status));
      if (!c->figures.empty()) s += "<div class=\"fig\">" + xml_text(c->figures) + "</div>";
      if (!c->why.empty() && c->status != "SKIP") {
        std::string why = c->why.size() > 160 ? c->why.substr(0, 157) + "..." : c->why;
        s += "<div class=\"why\">" + xml_text(why) + "</div>";
      }
      s += "</td>";
    }
    s += "</tr>\n";
  }
  s += "</table>\n<ol>\n";
  for (const Run& run : runs)
    s += fmt::format("<li><code>{}</code>: {}, driver {}, {}{}</li>\n", xml_text(basename(run.file)), xml_text(run.device),
                     xml_text(run.driver), xml_text(run.generated_at), run.options.empty() ? std::string() : ", options: " + xml_text(run.options));
  s += "</ol>\n<p style=\"font-size:12px;color:#57606a\">cpu r/w xN: CPU read/write bandwidth through the shared mapping "
       "divided by private memory in the same process (the leg with the lowest read ratio). gpu in/out: GPU copies "
       "into / out of the shared allocation (vkCmdCopyBuffer, cuMemcpyDtoD or glCopyBufferSubData by leg) in GB/s, vs device-local to device-local. Latencies: medians in µs.</p>\n"
       "</body>\n</html>\n";
  return s;
}

}  // namespace extmem::report
