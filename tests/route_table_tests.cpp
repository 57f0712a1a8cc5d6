// The route table as the single source of truth: the row names are the
// interface (support/row_names.h), the schema's row list, the README's route
// table and `extmem probe --list-routes` agree with it, a real run on this
// machine's driver reports only declared legs and every declared decisive leg,
// and rows phase A can answer start no process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/probe/routes.h"
#include "support/row_names.h"
#include "support/run_shell.h"
#include "support/temp_files.h"

namespace {

using nlohmann::json;
using extmem::probe::RouteInfo;

const std::string kSource = EXTMEM_SOURCE_DIR;

const RouteInfo* route_of(const std::string& row) {
  static const std::vector<RouteInfo> table = extmem::probe::routes();
  for (const RouteInfo& r : table)
    if (r.row == row) return &r;  // a row of its own, "T4-image-opaque-fd@linear" included
  const std::string base = row.substr(0, row.find('@'));  // "T1-opaque-fd@mt2" is a twin of "T1-opaque-fd"
  for (const RouteInfo& r : table)
    if (r.row == base) return &r;
  return nullptr;
}

// What is wrong with one row of a --json document against the table, or "".
// Reported legs must be declared, with the declared [D]/[i], in declared order;
// a row that ran to a verdict from its legs (OK, PARTIAL, FAIL) reports every
// declared decisive leg, attempted or notrun.
std::string table_problem(const json& row) {
  const std::string name = row.value("row", "");
  const RouteInfo* route = route_of(name);
  if (route == nullptr) return name + ": not in the route table";
  std::size_t next = 0;  // index into route->legs: declared order
  std::set<std::string> reported;
  for (const json& leg : row["legs"]) {
    const std::string leg_name = leg.value("name", "");
    auto it = std::find_if(route->legs.begin() + static_cast<std::ptrdiff_t>(next), route->legs.end(),
                           [&](const auto& l) { return l.name == leg_name; });
    if (it == route->legs.end()) return name + ": leg \"" + leg_name + "\" is not declared (or out of declared order)";
    if (it->decisive != leg.value("decisive", !it->decisive))
      return name + ": leg \"" + leg_name + "\" reported " + (it->decisive ? "[i]" : "[D]") + ", declared otherwise";
    next = static_cast<std::size_t>(it - route->legs.begin()) + 1;
    reported.insert(leg_name);
  }
  const std::string status = row.value("status", "");
  if (status == "OK" || status == "PARTIAL" || status == "FAIL")
    for (const auto& l : route->legs)
      if (l.decisive && !reported.count(l.name)) return name + ": declared decisive leg \"" + l.name + "\" not reported";
  return {};
}

// `extmem probe --json` on this machine, once for the tests that read it.
const json& default_run() {
  static const json doc = [] {
    extmem::test::TempDir dir;
    extmem::test::ShellRun r = extmem::test::run_extmem("probe --json=" + dir.file("r.json"));
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out;
    return json::parse(extmem::test::slurp(dir.file("r.json")), nullptr, false);
  }();
  return doc;
}

// The table's rows are the literal list: renaming, dropping or reordering a row is an interface change.
TEST(RouteTable, RowNamesAreTheInterface) {
  std::vector<std::string> rows;
  for (const RouteInfo& r : extmem::probe::routes()) rows.push_back(r.row);
  EXPECT_EQ(rows, extmem::test::kRowNames);
}

// Every route's group is a declared group, and leg names are unique within a route.
TEST(RouteTable, GroupsAndLegsAreWellFormed) {
  std::set<std::string> groups;
  for (const auto& g : extmem::probe::groups()) EXPECT_TRUE(groups.insert(g.name).second) << g.name;
  for (const RouteInfo& r : extmem::probe::routes()) {
    EXPECT_TRUE(groups.count(r.group)) << r.row << " has undeclared group " << r.group;
    std::set<std::string> legs;
    for (const auto& l : r.legs) {
      EXPECT_TRUE(legs.insert(l.name).second) << r.row << " declares leg " << l.name << " twice";
      EXPECT_FALSE(l.proves.empty()) << r.row << "/" << l.name << " does not say what it proves";
    }
    EXPECT_FALSE(r.server_does.empty()) << r.row;
  }
}

// The schema's row_name pattern is the one the table gives (`extmem probe
// --list-routes=row-pattern`), and lists the interface's rows, in order.
TEST(RouteTable, SchemaRowListIsTheTable) {
  json schema = json::parse(extmem::test::slurp(kSource + "/docs/probe-result.schema.json"), nullptr, false);
  ASSERT_FALSE(schema.is_discarded());
  const std::string pattern = schema["$defs"]["row_name"].value("pattern", "");
  extmem::test::ShellRun r = extmem::test::run_extmem("probe --list-routes=row-pattern");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(pattern + "\n", r.out) << "regenerate with: bash scripts/regenerate-docs.sh";
  ASSERT_EQ(pattern.rfind("^(", 0), 0u) << pattern;
  const std::size_t close = pattern.find(")(@mt");
  ASSERT_NE(close, std::string::npos) << pattern;
  std::vector<std::string> listed;
  std::string alternatives = pattern.substr(2, close - 2);
  for (std::size_t at = 0; at <= alternatives.size();) {
    std::size_t bar = alternatives.find('|', at);
    listed.push_back(alternatives.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 1;
  }
  EXPECT_EQ(listed, extmem::test::kRowNames);
}

// scripts/regenerate-docs.sh brings stale copies of the three generated parts
// back to what the table prints, and leaves a current tree as it is.
TEST(RouteTable, RegenerateDocsRewritesStaleParts) {
  extmem::test::TempDir dir;
  std::filesystem::create_directories(dir.path / "docs");
  struct Stale {
    const char* file;
    const char* begin;  // what the generated part starts after
    const char* end;    // and ends before
  };
  const Stale parts[] = {
      {"README.md", "<!-- routes:begin: generated by `extmem probe --list-routes=markdown` -->\n", "<!-- routes:end -->"},
      {"docs/probe.md", "<!-- faults:begin: generated by `extmem probe --list-routes=faults` -->\n", "<!-- faults:end -->"},
      {"docs/probe-result.schema.json", "\"pattern\": \"^(", "T1-opaque-fd|"}};
  for (const Stale& p : parts) {
    std::string text = extmem::test::slurp(kSource + "/" + p.file);
    const std::size_t from = text.find(p.begin), to = text.find(p.end, from);
    ASSERT_NE(from, std::string::npos) << p.file;
    ASSERT_NE(to, std::string::npos) << p.file;
    text.replace(from + std::strlen(p.begin), to - from - std::strlen(p.begin), "T9-gone|");  // a row the table lacks
    std::ofstream(dir.file(p.file)) << text;
  }
  const std::string cmd =
      "bash " + kSource + "/scripts/regenerate-docs.sh " + std::string(EXTMEM_BINARY) + " " + dir.path.string();
  extmem::test::ShellRun r = extmem::test::run_shell(cmd);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const Stale& p : parts) {
    EXPECT_EQ(extmem::test::slurp(dir.file(p.file)), extmem::test::slurp(kSource + "/" + p.file)) << p.file;
    EXPECT_NE(r.out.find(std::string("rewrote ") + p.file), std::string::npos) << r.out;
  }
  extmem::test::ShellRun again = extmem::test::run_shell(cmd);
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(again.out.find("rewrote"), std::string::npos) << "a current tree is left as it is: " << again.out;
}

// The text of `file` between the line `begin` and the marker `end`, which
// `extmem probe <args>` must print; empty when both agree, else what differs.
void expect_generated(const std::string& file, const std::string& begin, const std::string& end,
                      const std::string& args) {
  const std::string text = extmem::test::slurp(kSource + "/" + file);
  const std::size_t from = text.find(begin), to = text.find(end);
  ASSERT_NE(from, std::string::npos) << file << " lacks " << begin;
  ASSERT_NE(to, std::string::npos) << file << " lacks " << end;
  extmem::test::ShellRun r = extmem::test::run_extmem(args);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(text.substr(from + begin.size(), to - from - begin.size()), r.out)
      << "regenerate " << file << "'s section with: bash scripts/regenerate-docs.sh (it prints extmem " << args << ")";
}

// The README's route table is the one `extmem probe --list-routes=markdown` prints.
TEST(RouteTable, ReadmeRouteTableIsGenerated) {
  expect_generated("README.md", "<!-- routes:begin: generated by `extmem probe --list-routes=markdown` -->\n",
                   "<!-- routes:end -->", "probe --list-routes=markdown");
}

// docs/probe.md's list of the faults routes inject is the one `extmem probe --list-routes=faults` prints.
TEST(RouteTable, DocsFaultListIsGenerated) {
  expect_generated("docs/probe.md", "<!-- faults:begin: generated by `extmem probe --list-routes=faults` -->\n",
                   "<!-- faults:end -->", "probe --list-routes=faults");
}

// --list-routes=json carries the table: rows, groups, legs with [D]/[i].
TEST(RouteTable, ListRoutesJsonIsTheTable) {
  extmem::test::ShellRun r = extmem::test::run_extmem("probe --list-routes=json");
  ASSERT_EQ(r.code, 0) << r.out;
  json doc = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  const std::vector<RouteInfo> table = extmem::probe::routes();
  ASSERT_EQ(doc["routes"].size(), table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(doc["routes"][i]["row"], table[i].row);
    EXPECT_EQ(doc["routes"][i]["group"], table[i].group);
    ASSERT_EQ(doc["routes"][i]["legs"].size(), table[i].legs.size()) << table[i].row;
    for (std::size_t l = 0; l < table[i].legs.size(); ++l) {
      EXPECT_EQ(doc["routes"][i]["legs"][l]["name"], table[i].legs[l].name);
      EXPECT_EQ(doc["routes"][i]["legs"][l]["decisive"], table[i].legs[l].decisive);
    }
  }
  EXPECT_EQ(doc["groups"].size(), extmem::probe::groups().size());
}

// A bad --list-routes format is a usage error naming the accepted ones.
TEST(RouteTable, ListRoutesRejectsUnknownFormat) {
  extmem::test::ShellRun r = extmem::test::run_extmem("probe --list-routes=yaml");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("json, markdown, faults or row-pattern"), std::string::npos) << r.out;
}

// --list-routes without a value prints the markdown table (what docs/probe.md shows).
TEST(RouteTable, ListRoutesAloneIsMarkdown) {
  extmem::test::ShellRun bare = extmem::test::run_extmem("probe --list-routes");
  extmem::test::ShellRun md = extmem::test::run_extmem("probe --list-routes=markdown");
  EXPECT_EQ(bare.code, 0) << bare.out;
  EXPECT_EQ(md.code, 0) << md.out;
  EXPECT_EQ(bare.out, md.out);
}

// A real run reports only declared legs, with the declared kind, and every declared decisive leg.
TEST(RouteTable, RealRunLegsMatchTheTable) {
  const json& doc = default_run();
  ASSERT_FALSE(doc.is_discarded());
  ASSERT_EQ(doc["rows"].size(), extmem::test::kRowNames.size());
  for (const json& row : doc["rows"]) EXPECT_EQ(table_problem(row), "") << row.dump();
}

// Negative controls: the check fires on an undeclared leg, a flipped [D]/[i] and a missing decisive leg.
TEST(RouteTable, LegCheckFiresOnDrift) {
  json ok = {{"row", "T1-opaque-fd"}, {"status", "OK"},
             {"legs", json::array({{{"name", "rawmmap"}, {"decisive", false}}, {{"name", "vkimport"}, {"decisive", true}},
                                   {{"name", "gpu"}, {"decisive", true}}})}};
  EXPECT_EQ(table_problem(ok), "");
  json renamed = ok;
  renamed["legs"][2]["name"] = "gpux";
  EXPECT_NE(table_problem(renamed).find("not declared"), std::string::npos);
  json flipped = ok;
  flipped["legs"][0]["decisive"] = true;
  EXPECT_NE(table_problem(flipped).find("declared otherwise"), std::string::npos);
  json missing = ok;
  missing["legs"].erase(2);
  EXPECT_NE(table_problem(missing).find("not reported"), std::string::npos);
}

// Every extension a route requires is one phase A looks at; otherwise its absence would decide nothing.
TEST(RouteTable, RequiredExtensionsAreSeenByPhaseA) {
  const json& doc = default_run();
  ASSERT_FALSE(doc.is_discarded());
  const json& dev = doc["vulkan"]["devices"][doc["vulkan"]["selected"].get<int>()];
  for (const RouteInfo& r : extmem::probe::routes())
    for (const std::string& e : r.extensions) EXPECT_TRUE(dev["extensions"].contains(e)) << r.row << ": " << e;
}

// A row whose extension the device lacks is UNSUPPORTED without a process: a fault
// hook that aborts the route's first step would otherwise turn it into FAIL.
TEST(RouteTable, MissingExtensionStartsNoProcess) {
  const json& doc = default_run();
  ASSERT_FALSE(doc.is_discarded());
  const json& dev = doc["vulkan"]["devices"][doc["vulkan"]["selected"].get<int>()];
  if (dev["extensions"].value("VK_EXT_external_memory_dma_buf", true))
    GTEST_SKIP() << "this device exposes VK_EXT_external_memory_dma_buf";
  for (const char* role : {"server", "client"}) {
    extmem::test::ShellRun r = extmem::test::run_extmem(
        "probe --only=T1-dma-buf", std::string("EXTMEM_TEST_FAULT=T1-dma-buf:") + role + "::abort");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("RESULT T1-dma-buf UNSUPPORTED why: VK_EXT_external_memory_dma_buf not exposed by the device\n"),
              std::string::npos)
        << r.out;
  }
}

// Without a CUDA driver the CUDA rows are SKIP without a process (same fault-hook argument).
// A started route runs both its halves, so one half's hook per row is enough: the rows
// take the server and the client in turn (one probe run a row instead of two).
TEST(RouteTable, NoCudaDriverStartsNoProcess) {
  int n = 0;
  for (const RouteInfo& r : extmem::probe::routes()) {
    if (!r.cuda) continue;
    const char* role = n++ % 2 == 0 ? "server" : "client";
    extmem::test::ShellRun run = extmem::test::run_extmem(
        "probe --only=" + r.row,
        "EXTMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1 EXTMEM_TEST_FAULT=" + r.row + ":" + role + "::abort");
    EXPECT_EQ(run.code, 0) << run.out;
    EXPECT_NE(run.out.find("RESULT " + r.row + " SKIP why: "), std::string::npos) << run.out;
  }
  EXPECT_GE(n, 2);
}

}  // namespace

namespace {

// A --memory-type twin belongs to its row: what `extmem report` groups by.
TEST(RouteTable, TwinsBelongToTheirBaseRow) {
  EXPECT_EQ(extmem::probe::base_row("T1-opaque-fd@mt2"), "T1-opaque-fd");
  EXPECT_EQ(extmem::probe::twin_memory_type("T1-opaque-fd@mt2"), 2);
  EXPECT_EQ(extmem::probe::base_row("T1-opaque-fd"), "T1-opaque-fd");
  EXPECT_EQ(extmem::probe::twin_memory_type("T1-opaque-fd"), -1);
  EXPECT_EQ(extmem::probe::base_row("T1-opaque-fd@mtx"), "T1-opaque-fd@mtx");  // not a twin suffix
  EXPECT_EQ(extmem::probe::base_row("T1-opaque-fd@mt"), "T1-opaque-fd@mt");
  EXPECT_EQ(extmem::probe::twin_memory_type("T1-opaque-fd@mt123"), -1);  // --memory-type takes at most two digits
}

// An --fd-transport twin belongs to its row too, with or without a memory-type suffix before it.
TEST(RouteTable, PidfdTwinsBelongToTheirBaseRow) {
  EXPECT_EQ(extmem::probe::base_row("T1-opaque-fd@pidfd"), "T1-opaque-fd");
  EXPECT_EQ(extmem::probe::base_row("T1-opaque-fd@mt2@pidfd"), "T1-opaque-fd");
  EXPECT_EQ(extmem::probe::twin_memory_type("T1-opaque-fd@mt2@pidfd"), 2);
  EXPECT_EQ(extmem::probe::twin_memory_type("T1-opaque-fd@pidfd"), -1);
  EXPECT_EQ(extmem::probe::base_row("T4-image-opaque-fd@linear@pidfd"), "T4-image-opaque-fd@linear");
  EXPECT_TRUE(extmem::probe::is_pidfd_twin("T3-memfd-sealed@pidfd"));
  EXPECT_FALSE(extmem::probe::is_pidfd_twin("T3-memfd-sealed"));
  EXPECT_FALSE(extmem::probe::is_pidfd_twin("@pidfd"));  // a suffix needs a row before it
}

}  // namespace
