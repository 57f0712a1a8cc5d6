// Markdown and HTML forms of the fleet matrix (fleet.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "extmem/probe/routes.h"
#include "extmem/report/report.h"
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

// What one target did on one row: its latest cell, and how the row behaved over the target's runs.
struct Mark {
  const Cell* latest = nullptr;  // null: no run of the target has the row
  History history = History::single;
  std::vector<std::string> statuses;  // oldest first, runs without the row left out
  std::vector<const Run*> runs;       // the run of each status
  std::size_t since = 0;              // classify()'s
  std::string expected;               // the baseline's status, "" for none
};

std::string expected_status(const FleetOptions& o, const std::string& row, const Run& run) {
  if (o.baseline == nullptr) return {};
  const probe::Expectation* e = probe::expectation_for(*o.baseline, row, run.device, run.driver_name, run.driver_info);
  return e == nullptr ? std::string() : extmem::to_string(e->status);
}

Mark mark_of(const Target& t, const std::string& row, const FleetOptions& o) {
  Mark m;
  for (const Run* r : t.runs)
    if (const Cell* c = find_cell(*r, row)) {
      m.latest = c;
      m.statuses.push_back(c->status);
      m.runs.push_back(r);
    }
  if (m.latest == nullptr) return m;
  m.expected = expected_status(o, row, t.latest());
  m.history = classify(m.statuses, m.expected, &m.since);
  return m;
}

std::string when(const Run& r) { return r.generated_at.empty() ? basename(r.file) : r.generated_at; }

// The line under a cell, "" when there is nothing to say: a change, a flake, a difference from the baseline.
std::string remark(const Mark& m) {
  std::string s;
  if (m.history == History::changed) {
    const std::string before = m.since == 0 && !m.expected.empty() ? m.expected : m.statuses[m.since - 1];
    s = m.since == 0 && !m.expected.empty()
            ? fmt::format("changed: baseline {}, now {}", before, m.statuses.back())
            : fmt::format("changed: {} → {} since {}", before, m.statuses.back(), when(*m.runs[m.since]));
  } else if (m.history == History::flaky) {
    // The latest few statuses are enough to see the flake; the runs list has them all.
    const std::size_t from = m.statuses.size() > 6 ? m.statuses.size() - 6 : 0;
    std::vector<std::string> shown(m.statuses.begin() + static_cast<std::ptrdiff_t>(from), m.statuses.end());
    s = fmt::format("flaky: {}{}", from > 0 ? "… " : "", fmt::join(shown, " "));
  }
  if (!m.expected.empty() && m.expected != m.statuses.back() && m.history != History::changed)
    s += (s.empty() ? "" : "; ") + fmt::format("expected {}", m.expected);
  return s;
}

struct NodeAge {
  std::string node;
  std::size_t targets = 0, runs = 0;
  std::optional<std::int64_t> oldest_current, newest;  // nullopt: a run of the node has no time
  bool untimed = false;
};

// The nodes, the stalest first: a node's age is that of its oldest current result (the
// latest run of each of its targets, the oldest of those).
std::vector<NodeAge> node_ages(const std::vector<Target>& targets) {
  std::vector<NodeAge> out;
  for (const Target& t : targets) {
    auto it = std::find_if(out.begin(), out.end(), [&](const NodeAge& n) { return n.node == t.node; });
    if (it == out.end()) it = out.insert(out.end(), NodeAge{t.node, 0, 0, {}, {}, false});
    ++it->targets;
    it->runs += t.runs.size();
    const auto latest = t.latest().time;
    if (!latest) it->untimed = true;
    else {
      it->oldest_current = std::min(it->oldest_current.value_or(*latest), *latest);
      it->newest = std::max(it->newest.value_or(*latest), *latest);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const NodeAge& a, const NodeAge& b) {
    if (a.untimed != b.untimed) return a.untimed;
    return a.oldest_current.value_or(INT64_MIN) < b.oldest_current.value_or(INT64_MIN);
  });
  return out;
}

std::optional<std::int64_t> newest_input(const std::vector<Run>& runs) {
  std::optional<std::int64_t> n;
  for (const Run& r : runs)
    if (r.time) n = std::max(n.value_or(*r.time), *r.time);
  return n;
}

std::string utc_text(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string age_text(std::int64_t s) {
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m", s / 60);
  if (s < 86400) return fmt::format("{}h {}m", s / 3600, s / 60 % 60);
  return fmt::format("{}d {}h", s / 86400, s / 3600 % 24);
}

// One node's line of the nodes table, as cells: oldest current result, newest, behind the newest input, stale mark.
std::array<std::string, 4> age_cells(const NodeAge& n, std::optional<std::int64_t> newest, std::int64_t stale_after) {
  if (n.untimed) return {"unknown (a run has no generated_at)", n.newest ? utc_text(*n.newest) : "unknown", "?", "STALE?"};
  const std::int64_t behind = newest.value_or(*n.oldest_current) - *n.oldest_current;
  return {utc_text(*n.oldest_current), utc_text(*n.newest), age_text(behind), behind > stale_after ? "STALE" : ""};
}

std::string column_title(const Target& t) {
  return t.runs.size() == 1 ? fmt::format("{} · {}", t.node, t.device)
                            : fmt::format("{} · {} ({} runs)", t.node, t.device, t.runs.size());
}

std::string health_text(const Run& r) {
  if (!r.health) return {};
  if (r.health->ok) return "health OK";
  return fmt::format("health NOT OK ({} problem{}, first: {})", r.health->problems, r.health->problems == 1 ? "" : "s",
                     r.health->first);
}

std::string run_line(const Run& r) {
  std::string s = fmt::format("{}: {} · {}, driver {}, {}", basename(r.file), r.node, r.device, r.driver, r.generated_at);
  if (!r.options.empty()) s += ", options: " + r.options;
  if (std::string h = health_text(r); !h.empty()) s += ", " + h;
  return s;
}

// Whether the report has a history or a baseline to show: otherwise it is the plain matrix.
bool has_changes_column(const std::vector<Target>& targets, const FleetOptions& o) {
  return o.baseline != nullptr ||
         std::any_of(targets.begin(), targets.end(), [](const Target& t) { return t.runs.size() > 1; });
}

std::string stale_rule(const std::vector<Run>& runs, const FleetOptions& o) {
  const auto newest = newest_input(runs);
  return fmt::format("a node is STALE when its oldest current result (the latest run of each of its devices, the oldest "
                     "of those) is more than {} older than the newest input ({})",
                     age_text(o.stale_after_s), newest ? utc_text(*newest) : "none has a time");
}

// "uid N", or what stands for a peer nothing identified.
std::string peer_of(const ServedSession& s) {
  return s.peer_identified ? fmt::format("uid {}", s.peer_uid) : std::string("an unidentified peer (tcp, --listen-any)");
}

// Each --peer run (its column, its boundary) with its serving side's session, joined by
// run id, then the serving sides' sessions whose driving run was not given. Plain text.
std::vector<std::string> across_lines(const std::vector<Target>& targets, const FleetOptions& o) {
  static const std::vector<ServedSession> kNone;
  const std::vector<ServedSession>& served = o.served != nullptr ? *o.served : kNone;
  std::vector<std::string> lines;
  std::vector<bool> joined(served.size(), false);
  for (std::size_t i = 0; i < targets.size(); ++i)
    for (const Run* r : targets[i].runs) {
      if (!r->peer) continue;
      const PeerOf& p = *r->peer;
      std::string line = fmt::format("[{}] {}: --peer={}, run {}, the serving side ran the {} halves; boundary: {}", i + 1,
                                     basename(r->file), p.endpoint, p.run_id, p.served_role,
                                     p.boundary.empty() ? std::string("none") : fmt::format("{}", fmt::join(p.boundary, ", ")));
      auto it = std::find_if(served.begin(), served.end(), [&](const ServedSession& s) { return s.run_id == p.run_id; });
      if (it == served.end()) {
        line += "; the serving side's document was not given";
      } else {
        joined[static_cast<std::size_t>(it - served.begin())] = true;
        line += fmt::format("; served by {} on {} ({}): {} halves for {}{}{}", basename(it->file), it->node,
                            it->endpoint, it->halves, peer_of(*it), it->refused.empty() ? "" : ", refused " + it->refused,
                            it->ended.empty() ? "" : ", ended: " + it->ended);
      }
      lines.push_back(std::move(line));
    }
  for (std::size_t k = 0; k < served.size(); ++k)
    if (!joined[k])
      lines.push_back(fmt::format("{} on {} ({}): run {}, {} halves for {}: its driving side's document was not given",
                                  basename(served[k].file), served[k].node, served[k].endpoint, served[k].run_id,
                                  served[k].halves, peer_of(served[k])));
  return lines;
}

constexpr const char* kAcrossTitle = "Across a boundary (extmem probe --peer and serve, joined by run id):";

constexpr const char* kHistoryNote =
    "History of a row over one node's runs of one device with the same options, the baseline's status first when "
    "`--expect` has one: no switch is stable, one switch is changed (since the first run after it, or from the "
    "baseline), more than one is flaky.";

}  // namespace

std::string markdown(const std::vector<Run>& runs, const FleetOptions& o) {
  const std::vector<Target> targets = targets_of(runs);
  const bool changes = has_changes_column(targets, o);
  std::string s = "# extmem probe: device × row matrix\n\n";
  s += "| row |";
  std::string rule = "|---|";
  for (std::size_t i = 0; i < targets.size(); ++i) {
    s += fmt::format(" [{}] {} |", i + 1, md(column_title(targets[i])));
    rule += "---|";
  }
  if (changes) {
    s += " changes |";
    rule += "---|";
  }
  s += "\n" + rule + "\n";
  for (const std::string& row : row_union(runs)) {
    s += "| " + md(row) + " |";
    std::vector<std::string> changed;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const Mark m = mark_of(targets[i], row, o);
      if (m.latest == nullptr) {
        s += " — |";
        continue;
      }
      s += " **" + md(m.latest->status) + "**";
      if (!m.latest->figures.empty()) s += "<br>" + md(m.latest->figures);
      if (std::string r = remark(m); !r.empty()) {
        s += "<br>⚠ " + md(r);
        changed.push_back(fmt::format("[{}] {}", i + 1, r));
      }
      s += " |";
    }
    if (changes) s += " " + md(fmt::format("{}", fmt::join(changed, "; "))) + " |";
    s += "\n";
  }
  const auto newest = newest_input(runs);
  s += "\nNodes, the stalest first (" + md(stale_rule(runs, o)) + "):\n\n";
  s += "| node | devices × options | runs | oldest current result | newest result | behind the newest input | |\n"
       "|---|---|---|---|---|---|---|\n";
  for (const NodeAge& n : node_ages(targets)) {
    const auto cells = age_cells(n, newest, o.stale_after_s);
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", md(n.node), n.targets, n.runs, cells[0], cells[1], cells[2],
                     cells[3].empty() ? "" : "**" + cells[3] + "**");
  }
  s += "\nRuns:\n\n";
  for (std::size_t i = 0; i < targets.size(); ++i)
    for (const Run* r : targets[i].runs) s += fmt::format("- [{}] `{}`\n", i + 1, md(run_line(*r)));
  if (const auto across = across_lines(targets, o); !across.empty()) {
    s += fmt::format("\n{}\n\n", kAcrossTitle);
    for (const std::string& l : across) s += "- " + md(l) + "\n";
  }
  if (changes) s += fmt::format("\n{}\n", kHistoryNote);
  s += "\nFigures (from `--measure`): `cpu r/w xN` = CPU read/write bandwidth through the shared mapping divided by "
       "private memory in the same process (the leg with the lowest read ratio); `gpu in/out` = GPU copies into / out of "
       "the shared allocation (vkCmdCopyBuffer, cuMemcpyDtoD or glCopyBufferSubData by leg), GB/s, vs device-local "
       "to device-local; latencies are medians in µs.\n";
  return s;
}

std::string html(const std::vector<Run>& runs, const FleetOptions& o) {
  const std::vector<Target> targets = targets_of(runs);
  const bool changes = has_changes_column(targets, o);
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>extmem probe: device × row matrix</title>\n<style>\n"
      "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1b1f24;background:#fff}\n"
      "h1{font-size:20px;margin:0 0 12px}\nh2{font-size:16px;margin:20px 0 8px}\n"
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
      ".chg{font-size:12px;font-weight:600;color:#9a6700;margin-top:3px}\n"
      ".stale{font-weight:700;color:#a40e26}\n"
      "td.none{color:#8c959f;text-align:center}\n"
      "ol,p{font-size:13px}\n"
      "</style>\n</head>\n<body>\n<h1>extmem probe: device × row matrix</h1>\n<table>\n<tr><th>row</th>";
  for (std::size_t i = 0; i < targets.size(); ++i)
    s += fmt::format("<th>[{}] {}<br><small>{}</small></th>", i + 1, xml_text(column_title(targets[i])),
                     xml_text(basename(targets[i].latest().file)));
  if (changes) s += "<th>changes</th>";
  s += "</tr>\n";
  for (const std::string& row : row_union(runs)) {
    s += "<tr><td class=\"row\">" + xml_text(row) + "</td>";
    std::vector<std::string> changed;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const Mark m = mark_of(targets[i], row, o);
      if (m.latest == nullptr) {
        s += "<td class=\"none\">—</td>";
        continue;
      }
      const Cell* c = m.latest;
      s += fmt::format("<td class=\"{}\"><span class=\"st\"{}>{}</span>", status_class(c->status),
                       c->why.empty() ? std::string() : " title=\"" + xml_text(c->why) + "\"", xml_text(c->status));
      if (!c->figures.empty()) s += "<div class=\"fig\">" + xml_text(c->figures) + "</div>";
      if (!c->why.empty() && c->status != "SKIP") {
        std::string why = c->why.size() > 160 ? c->why.substr(0, 157) + "..." : c->why;
        s += "<div class=\"why\">" + xml_text(why) + "</div>";
      }
      if (std::string r = remark(m); !r.empty()) {
        s += "<div class=\"chg\">⚠ " + xml_text(r) + "</div>";
        changed.push_back(fmt::format("[{}] {}", i + 1, r));
      }
      s += "</td>";
    }
    if (changes) s += "<td>" + xml_text(fmt::format("{}", fmt::join(changed, "; "))) + "</td>";
    s += "</tr>\n";
  }
  const auto newest = newest_input(runs);
  s += "</table>\n<h2>Nodes, the stalest first</h2>\n<p>" + xml_text(stale_rule(runs, o)) +
       ".</p>\n<table>\n<tr><th>node</th><th>devices × options</th><th>runs</th><th>oldest current result</th>"
       "<th>newest result</th><th>behind the newest input</th><th></th></tr>\n";
  for (const NodeAge& n : node_ages(targets)) {
    const auto cells = age_cells(n, newest, o.stale_after_s);
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"stale\">{}</td></tr>\n",
                     xml_text(n.node), n.targets, n.runs, cells[0], cells[1], cells[2], cells[3]);
  }
  s += "</table>\n<h2>Runs</h2>\n<ol>\n";
  for (std::size_t i = 0; i < targets.size(); ++i)
    for (const Run* r : targets[i].runs) s += fmt::format("<li>[{}] <code>{}</code></li>\n", i + 1, xml_text(run_line(*r)));
  s += "</ol>\n";
  if (const auto across = across_lines(targets, o); !across.empty()) {
    s += std::string("<h2>") + xml_text(kAcrossTitle) + "</h2>\n<ul>\n";
    for (const std::string& l : across) s += "<li>" + xml_text(l) + "</li>\n";
    s += "</ul>\n";
  }
  if (changes) s += "<p>" + xml_text(kHistoryNote) + "</p>\n";
  s += "<p style=\"font-size:12px;color:#57606a\">cpu r/w xN: CPU read/write bandwidth through the shared mapping "
       "divided by private memory in the same process (the leg with the lowest read ratio). gpu in/out: GPU copies "
       "into / out of the shared allocation (vkCmdCopyBuffer, cuMemcpyDtoD or glCopyBufferSubData by leg) in GB/s, vs device-local to device-local. Latencies: medians in µs.</p>\n"
       "</body>\n</html>\n";
  return s;
}

}  // namespace extmem::report
