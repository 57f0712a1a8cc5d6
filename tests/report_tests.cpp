// `extmem report`: probe documents from real runs on this machine's driver
// (lavapipe in CI) merged into the device x row matrix; malformed JSON and
// unknown schema versions are exit 2 with a message naming the file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shared_run.h"
#include "support/temp_files.h"

#include "extmem/report/report.h"
#include "report/key_figures.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = EXTMEM_BINARY;

using extmem::test::slurp;
using Dir = extmem::test::TempDir;  // a fresh directory per test, removed afterwards

struct Out {
  int code = -1;
  std::string out, err;
};

Out sh(const std::string& args) {
  Dir d;
  std::string cmd = args + " >" + d.file("out") + " 2>" + d.file("err");
  int st = std::system(cmd.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(d.file("out")), slurp(d.file("err"))};
}

// Two real runs with different options: --measure on every row, and --memory-type=all on the T1 rows.
// Made once per ctest invocation and read by every test here (support/shared_run.h).
struct Docs {
  std::string dir = extmem::test::shared_run_dir("report-docs", [](const std::string& dir) {
    sh(kBinary + " probe --measure --measure-size=4194304 --measure-repeats=3 --json=" + dir + "/measured.json");
    sh(kBinary + " probe --only-t1 --no-gles --memory-type=all --json=" + dir + "/sweep.json");
  });
  std::string measured = dir + "/measured.json", sweep = dir + "/sweep.json";
};
const Docs& docs() {
  static const Docs d;
  return d;
}

TEST(Report, MergesTwoRunsIntoOneMatrix) {
  const Docs& d = docs();
  Dir out;
  Out o = sh(kBinary + " report " + d.measured + " " + d.sweep + " --markdown=" + out.file("m.md") + " --html=" +
             out.file("m.html"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(o.out.empty()) << "files were asked for, stdout stays empty: " << o.out;
  std::string md = slurp(out.file("m.md"));
  // Header: a row column and one column per run.
  EXPECT_NE(md.find("| row | [1] "), std::string::npos) << md;
  EXPECT_NE(md.find(" | [2] "), std::string::npos) << md;
  // Each run's rows: the measured OK row has its figures, the sweep's @mt row sits under its base row.
  std::istringstream lines(md);
  std::string line, previous;
  bool opaque = false, mt = false;
  while (std::getline(lines, line)) {
    if (line.rfind("| T1-opaque-fd |", 0) == 0) {
      opaque = true;
      EXPECT_NE(line.find("**OK**<br>cpu r x"), std::string::npos) << line;
      EXPECT_NE(line.find("gpu in "), std::string::npos) << line;
    }
    if (line.rfind("| T1-opaque-fd@mt0 |", 0) == 0) {
      mt = true;
      EXPECT_EQ(previous.rfind("| T1-opaque-fd |", 0), 0u) << previous;
      EXPECT_NE(line.find("| — | **OK** |"), std::string::npos) << line;  // only the sweep has it
    }
    if (line.rfind("| T3-memfd-cross-process |", 0) == 0) EXPECT_NE(line.find("| **SKIP** |"), std::string::npos) << line;
    previous = line;
  }
  EXPECT_TRUE(opaque && mt) << md;
  EXPECT_NE(md.find("measured.json"), std::string::npos);
  EXPECT_NE(md.find("sweep.json"), std::string::npos);
  EXPECT_NE(md.find("memory-type=all"), std::string::npos);

  std::string page = slurp(out.file("m.html"));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<style>"), std::string::npos);
  for (const char* external : {"<script", "<link", "src=", "url(", "@import", "http://", "https://"})
    EXPECT_EQ(page.find(external), std::string::npos) << "self-contained page has " << external;
  EXPECT_NE(page.find("<td class=\"row\">T1-opaque-fd@mt0</td>"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"ok\"><span class=\"st\">OK</span><div class=\"fig\">cpu r x"), std::string::npos);
  Out wf = sh("xmllint --html --noout " + out.file("m.html"));
  EXPECT_EQ(wf.code, 0) << wf.err;
}

// Documents written before --measure existed (the committed H200 runs) still read.
TEST(Report, ReadsDocumentsFromBeforeMeasure) {
  const std::string dir = std::string(EXTMEM_SOURCE_DIR) + "/docs/results/";
  Out o = sh(kBinary + " report " + dir + "nvidia-h200-580.json " + dir + "nvidia-h200-580-soak.json " + docs().sweep);
  EXPECT_EQ(o.code, 0) << o.err;
  // They have no context.hostname: each file is a node of its own, labelled with its name.
  EXPECT_NE(o.out.find("| row | [1] nvidia-h200-580.json · NVIDIA H200 | [2] nvidia-h200-580-soak.json · NVIDIA H200 | [3] "),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("| T1-opaque-fd | **OK** | **OK** | **OK** |"), std::string::npos) << o.out;
}

TEST(Report, MarkdownGoesToStdoutWithoutOutputOptions) {
  Out o = sh(kBinary + " report " + docs().sweep);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("| T1-opaque-fd@mt0 | **OK** |"), std::string::npos) << o.out;
}

// An --fd-transport twin sits right under its row even when the first document has only the twin
// (--fd-transport=pidfd) and a later one only the row (the twin's key ties with its row's otherwise).
TEST(Report, PidfdTwinFollowsItsRowWhateverOrderTheDocumentsCame) {
  Dir d;
  const std::string twin_only = d.file("pidfd.json"), row_only = d.file("scm.json");
  sh(kBinary + " probe --only=T3-memfd-cross-process --fd-transport=pidfd --json=" + twin_only);
  sh(kBinary + " probe --only=T3-memfd-cross-process --json=" + row_only);
  Out o = sh(kBinary + " report " + twin_only + " " + row_only);
  ASSERT_EQ(o.code, 0) << o.err;
  const std::size_t row = o.out.find("| T3-memfd-cross-process |"), twin = o.out.find("| T3-memfd-cross-process@pidfd |");
  ASSERT_NE(row, std::string::npos) << o.out;
  ASSERT_NE(twin, std::string::npos) << o.out;
  EXPECT_LT(row, twin) << o.out;
}

TEST(Report, MalformedJsonIsExit2NamingFileAndPosition) {
  Dir d;
  std::ofstream(d.file("broken.json")) << "{\"schema\": \"extmem-probe-result\",\n \"rows\": [1, 2,, 3]}";
  Out o = sh(kBinary + " report " + docs().sweep + " " + d.file("broken.json") + " --markdown=" + d.file("out.md"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("broken.json"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("line 2, column"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("byte 50"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(d.file("out.md"))) << "nothing half-written";
}

TEST(Report, UnknownSchemaVersionIsExit2) {
  Dir d;
  json doc = json::parse(slurp(docs().sweep));
  doc["schema_version"] = 2;
  std::ofstream(d.file("v2.json")) << doc.dump();
  Out o = sh(kBinary + " report " + d.file("v2.json"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("v2.json"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("schema_version 2 is not supported; this extmem reads schema_version 1"), std::string::npos) << o.err;
  EXPECT_TRUE(o.out.empty());
  doc["schema_version"] = "1";
  std::ofstream(d.file("vs.json")) << doc.dump();
  o = sh(kBinary + " report " + d.file("vs.json"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("not an integer"), std::string::npos) << o.err;
}

TEST(Report, OtherBadInputsAreExit2) {
  Dir d;
  std::ofstream(d.file("other.json")) << "{\"schema\": \"something-else\", \"schema_version\": 1}";
  std::ofstream(d.file("norows.json")) << "{\"schema\": \"extmem-probe-result\", \"schema_version\": 1, \"vulkan\": "
                                          "{\"selected\": 0, \"devices\": [{\"name\": \"x\"}]}, \"rows\": [{\"row\": 3}]}";
  std::ofstream(d.file("empty.json")) << "";
  for (const char* f : {"other.json", "norows.json", "empty.json", "missing.json"}) {
    Out o = sh(kBinary + " report " + d.file(f));
    EXPECT_EQ(o.code, 2) << f << o.out;
    EXPECT_NE(o.err.find(f), std::string::npos) << o.err;
  }
  Out none = sh(kBinary + " report");
  EXPECT_EQ(none.code, 2) << none.err;
  Out out_dir = sh(kBinary + " report " + docs().sweep + " --html=/nonexistent-dir/x.html");
  EXPECT_EQ(out_dir.code, 2);
  EXPECT_NE(out_dir.err.find("--html"), std::string::npos) << out_dir.err;
}

TEST(ReportParse, KeyFiguresPickTheWorstCpuReadLeg) {
  json m = {{"size", 1},
            {"repeats", 1},
            {"route", {{"export_us", {{"median", 3.0}, {"min", 3.0}, {"max", 3.0}, {"n", 1}}}}},
            {"legs",
             {{"a", {{"cpu_read_ratio", 0.9}, {"cpu_write_ratio", 1.0}}},
              {"b", {{"cpu_read_ratio", 0.05}, {"cpu_write_ratio", 0.8}}}}}};
  EXPECT_EQ(extmem::report::key_figures(m), "cpu r x0.05 w x0.80 (b); export 3 µs");
  EXPECT_EQ(extmem::report::key_figures(nullptr), "");
  EXPECT_EQ(extmem::report::key_figures({{"error", "x"}, {"run_status", "FAIL"}}), "not measured");
}

// Found by fleet_report_fuzz: a number too large for any C++ type made nlohmann
// throw out_of_range (not parse_error) and the reader crashed; a mistyped option
// or figure made value() throw type_error. Both are now exit-2 messages.
TEST(ReportParse, OverflowingNumbersAndMistypedFieldsAreRejectedNotThrown) {
  const std::string head = R"({"schema":"extmem-probe-result","schema_version":1,"vulkan":{"selected":0,"devices":[{"name":"d"}]},)";
  for (const std::string& text : {
           std::string(R"({"schema":"extmem-probe-result","schema_version":1,"x":736132322e332})"),
           head + R"("options":{"measure":true,"measure_size":"big"},"rows":[]})",
           head + R"("rows":[{"row":"T1-opaque-fd","status":"OK","measure":{"legs":{"a":{"cpu_read_ratio":1,"cpu_write_ratio":"x"}}}}]})",
       }) {
    extmem::Result<extmem::report::Run> r = extmem::Error{};
    EXPECT_NO_THROW(r = extmem::report::parse_run("f.json", text)) << text;
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().step, "f.json");
    EXPECT_FALSE(r.error().detail.empty());
  }
}

TEST(ReportParse, MarkdownEscapesPipes) {
  auto run = extmem::report::parse_run(
      "x.json", R"({"schema":"extmem-probe-result","schema_version":1,"vulkan":{"selected":0,"devices":[{"name":"a|b"}]},
                  "rows":[{"row":"T1-opaque-fd","status":"OK","why":""}]})");
  ASSERT_TRUE(run) << run.error().detail;
  std::string md = extmem::report::markdown({*run});
  EXPECT_NE(md.find("a\\|b"), std::string::npos) << md;
}

// ---- fleets (docs/report.md, "Fleets") ----
//
// tests/data/report/: three real runs of one machine (lavapipe), a second apart,
// `--only=T1-opaque-fd,T1-dma-buf,T3-memfd-cross-process --require=T1-opaque-fd,T3-memfd-cross-process`,
// the second with --timeout=1ms (its routes outlive the limit: FAIL, health NOT OK); see
// tests/data/report/README.md. Labelled NODE=FILE, the same files make several nodes' histories.

const std::string kData = std::string(EXTMEM_SOURCE_DIR) + "/tests/data/report/";

std::string data(const std::string& label, const std::string& file) { return " " + label + "=" + kData + file; }

// The Markdown line of `row` in `md`.
std::string md_line(const std::string& md, const std::string& row) {
  const std::size_t at = md.find("\n| " + row + " |");
  return at == std::string::npos ? std::string() : md.substr(at + 1, md.find('\n', at + 1) - at - 1);
}

// The cells of a Markdown table line, trimmed.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::size_t at = line.find('|');
  while (at != std::string::npos) {
    const std::size_t next = line.find('|', at + 1);
    if (next == std::string::npos) break;
    std::string c = line.substr(at + 1, next - at - 1);
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
    out.push_back(c);
    at = next;
  }
  return out;
}

std::string generated_at(const std::string& file) { return json::parse(slurp(kData + file)).value("generated_at", ""); }

TEST(ReportParse, ClassifiesHistories) {
  using extmem::report::classify;
  using extmem::report::History;
  std::size_t since = 99;
  EXPECT_EQ(classify({"OK"}, "", &since), History::single);
  EXPECT_EQ(classify({"OK", "OK", "OK"}, "", &since), History::stable);
  EXPECT_EQ(classify({"OK", "OK", "FAIL", "FAIL"}, "", &since), History::changed);
  EXPECT_EQ(since, 2u) << "the first run after the switch";
  EXPECT_EQ(classify({"OK", "FAIL", "OK"}, "", &since), History::flaky);
  EXPECT_EQ(classify({"OK", "FAIL", "FAIL", "OK"}, "", &since), History::flaky);
  // The baseline's status comes first in the sequence.
  EXPECT_EQ(classify({"OK"}, "OK", &since), History::stable);
  EXPECT_EQ(classify({"UNSUPPORTED", "UNSUPPORTED"}, "OK", &since), History::changed);
  EXPECT_EQ(since, 0u) << "changed from the baseline";
  EXPECT_EQ(classify({"OK", "FAIL"}, "OK", &since), History::changed);
  EXPECT_EQ(since, 1u);
  EXPECT_EQ(classify({"FAIL", "OK"}, "OK", &since), History::flaky);
}

// One node's repeated runs of one device with the same options are one column: the latest
// status, and the row's history over the runs, in the cell and in the "changes" column.
TEST(ReportFleet, RepeatedRunsOfOneNodeAreOneColumnWithTheirHistory) {
  Out o = sh(kBinary + " report" + data("a", "run-1.json") + data("a", "run-2.json") + data("a", "run-3.json") +
             data("b", "run-1.json") + data("b", "run-2.json") + data("c", "run-3.json") + data("c", "run-1.json"));
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string dev = "llvmpipe (LLVM 15.0.6, 256 bits)";
  EXPECT_NE(o.out.find("| row | [1] a · " + dev + " (3 runs) | [2] b · " + dev + " (2 runs) | [3] c · " + dev +
                       " (2 runs) | changes |"),
            std::string::npos)
      << o.out;
  const std::vector<std::string> opaque = cells(md_line(o.out, "T1-opaque-fd"));
  ASSERT_EQ(opaque.size(), 5u) << o.out;
  EXPECT_EQ(opaque[1], "**OK**<br>⚠ flaky: OK FAIL OK");
  EXPECT_EQ(opaque[2], "**FAIL**<br>⚠ changed: OK → FAIL since " + generated_at("run-2.json"));
  EXPECT_EQ(opaque[3], "**OK**") << "run-1 then run-3, whatever order they were named in";
  EXPECT_EQ(opaque[4], "[1] flaky: OK FAIL OK; [2] changed: OK → FAIL since " + generated_at("run-2.json"));
  // Rows that did not change have an empty changes cell.
  const std::vector<std::string> dma = cells(md_line(o.out, "T1-dma-buf"));
  ASSERT_EQ(dma.size(), 5u);
  EXPECT_EQ(dma[4], "");
  // Each run is listed under its column, with its health.
  EXPECT_NE(o.out.find("- [1] `run-2.json: a · " + dev), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("health NOT OK (2 problems, first: T1-opaque-fd FAIL EM5"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("health OK`"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("more than one is flaky"), std::string::npos) << "the rule is stated";
}

// Without NODE=, the node is the document's context.hostname; one run per node is the plain matrix.
TEST(ReportFleet, NodeDefaultsToTheRecordedHostname) {
  const std::string host = json::parse(slurp(kData + "run-1.json"))["context"].value("hostname", "");
  ASSERT_FALSE(host.empty());
  Out o = sh(kBinary + " report " + kData + "run-1.json");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("| row | [1] " + host + " · llvmpipe"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("| changes |"), std::string::npos) << "no history, no baseline: no changes column";
}

// --expect: the probe's baseline file; a row whose status differs is marked and listed.
TEST(ReportFleet, BaselineMarksRowsThatDiffer) {
  Out o = sh(kBinary + " report" + data("a", "run-1.json") + data("a", "run-3.json") + data("b", "run-2.json") +
             " --expect=" + kData + "baseline.txt");
  ASSERT_EQ(o.code, 0) << o.err;
  const std::vector<std::string> dma = cells(md_line(o.out, "T1-dma-buf"));
  ASSERT_EQ(dma.size(), 4u) << o.out;
  EXPECT_NE(dma[1].find("⚠ changed: baseline OK, now UNSUPPORTED"), std::string::npos) << dma[1];
  EXPECT_NE(dma[3].find("[1] changed: baseline OK, now UNSUPPORTED; [2] changed: baseline OK, now UNSUPPORTED"),
            std::string::npos)
      << dma[3];
  // A row the baseline expects, met: no mark. A single run that differs from the baseline: changed.
  EXPECT_EQ(cells(md_line(o.out, "T3-memfd-cross-process"))[1], "**OK**");
  EXPECT_EQ(cells(md_line(o.out, "T1-opaque-fd"))[2], "**FAIL**<br>⚠ changed: baseline OK, now FAIL");
  // A malformed baseline is refused with probe --expect's message, exit 2.
  Dir d;
  std::ofstream(d.file("bad.txt")) << "T1-opaque-fd MAYBE\n";
  Out bad = sh(kBinary + " report " + kData + "run-1.json --expect=" + d.file("bad.txt"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("extmem report: --expect: " + d.file("bad.txt") + ":1: unknown status \"MAYBE\"; accepted:"),
            std::string::npos)
      << bad.err;
}

// The nodes table, the stalest first: a node's age is its oldest current result's.
TEST(ReportFleet, StaleNodesStandOut) {
  const std::string h200 = std::string(EXTMEM_SOURCE_DIR) + "/docs/results/nvidia-h200-580.json";
  Out o = sh(kBinary + " report" + data("fresh", "run-3.json") + " gpu-node=" + h200);
  ASSERT_EQ(o.code, 0) << o.err;
  const std::size_t table = o.out.find("| node | devices × options | runs |");
  ASSERT_NE(table, std::string::npos) << o.out;
  const std::size_t gpu = o.out.find("| gpu-node |", table), fresh = o.out.find("| fresh |", table);
  ASSERT_NE(gpu, std::string::npos) << o.out;
  ASSERT_NE(fresh, std::string::npos) << o.out;
  EXPECT_LT(gpu, fresh) << "the stalest first";
  EXPECT_NE(o.out.substr(gpu, o.out.find('\n', gpu) - gpu).find("| **STALE** |"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.substr(fresh, o.out.find('\n', fresh) - fresh).find("STALE"), std::string::npos) << o.out;
  // A node's age is that of its oldest current result: with --stale-after=1s, run-1 (two seconds
  // before run-3) is stale, whichever node has run-3 too is not.
  Out s = sh(kBinary + " report" + data("old", "run-1.json") + data("new", "run-1.json") + data("new", "run-3.json") +
             " --stale-after=1s");
  ASSERT_EQ(s.code, 0) << s.err;
  const std::vector<std::string> old_row = cells(md_line(s.out, "old")), new_row = cells(md_line(s.out, "new"));
  ASSERT_EQ(old_row.size(), 7u) << s.out;
  ASSERT_EQ(new_row.size(), 7u) << s.out;
  EXPECT_EQ(old_row[3], generated_at("run-1.json"));
  EXPECT_EQ(old_row[6], "**STALE**");
  EXPECT_EQ(new_row[3], generated_at("run-3.json"));
  EXPECT_EQ(new_row[6], "");
  Out bad = sh(kBinary + " report " + kData + "run-1.json --stale-after=soon");
  EXPECT_EQ(bad.code, 2) << bad.err;
}

TEST(ReportFleet, HtmlShowsHistoryAndStaleness) {
  Dir d;
  Out o = sh(kBinary + " report" + data("a", "run-1.json") + data("a", "run-2.json") + data("a", "run-3.json") +
             " --stale-after=1s --html=" + d.file("f.html") + " --expect=" + kData + "baseline.txt");
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string page = slurp(d.file("f.html"));
  EXPECT_NE(page.find("<div class=\"chg\">⚠ flaky: OK FAIL OK</div>"), std::string::npos) << page;
  EXPECT_NE(page.find("<th>changes</th>"), std::string::npos);
  EXPECT_NE(page.find("<h2>Nodes, the stalest first</h2>"), std::string::npos);
  for (const char* external : {"<script", "<link", "src=", "url(", "@import", "http://", "https://"})
    EXPECT_EQ(page.find(external), std::string::npos) << "self-contained page has " << external;
  Out wf = sh("xmllint --html --noout " + d.file("f.html"));
  EXPECT_EQ(wf.code, 0) << wf.err;
}

// The fields a fleet report reads are checked as strictly as the rows: a document whose
// health, generated_at or hostname is malformed is exit 2, naming the file and the field.
TEST(ReportFleet, MalformedFleetFieldsAreExit2) {
  const json good = json::parse(slurp(kData + "run-2.json"));
  ASSERT_TRUE(good.contains("health"));
  struct Case {
    const char* name;
    std::function<void(json&)> spoil;
    const char* said;
  };
  const std::vector<Case> cases = {
      {"ok-string.json", [](json& j) { j["health"]["ok"] = "no"; }, "\"health\" is not an object"},
      {"ok-mismatch.json", [](json& j) { j["health"]["ok"] = true; }, "\"health\": \"ok\" is true with 2 problem(s)"},
      {"problem-code.json", [](json& j) { j["health"]["problems"][1]["code"] = "EM505"; }, "health.problems[1]"},
      {"problem-step.json", [](json& j) { j["health"]["problems"][0]["step"] = 3; }, "health.problems[0]"},
      {"time.json", [](json& j) { j["generated_at"] = "yesterday"; }, "\"generated_at\" is not a UTC time"},
      {"month.json", [](json& j) { j["generated_at"] = "2026-13-01T00:00:00Z"; }, "\"generated_at\" is not a UTC time"},
      {"host.json", [](json& j) { j["context"]["hostname"] = 7; }, "\"context.hostname\" is not a string"},
  };
  Dir d;
  for (const Case& c : cases) {
    json doc = good;
    c.spoil(doc);
    std::ofstream(d.file(c.name)) << doc.dump();
    Out o = sh(kBinary + " report " + kData + "run-1.json n=" + d.file(c.name));
    EXPECT_EQ(o.code, 2) << c.name << "\n" << o.out;
    EXPECT_NE(o.err.find(std::string(c.name) + ": "), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(c.said), std::string::npos) << c.name << ": " << o.err;
  }
  Out missing = sh(kBinary + " report node=" + d.file("absent.json"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("read " + d.file("absent.json")), std::string::npos) << missing.err;
}

TEST(ReportParse, InputLabels) {
  using extmem::report::split_input;
  EXPECT_EQ(split_input("gpu-01=r.json").node, "gpu-01");
  EXPECT_EQ(split_input("gpu-01=r.json").path, "r.json");
  EXPECT_EQ(split_input("dir/a=b.json").node, "") << "a '/' before the '=': a path";
  EXPECT_EQ(split_input("dir/a=b.json").path, "dir/a=b.json");
  EXPECT_EQ(split_input("=x.json").path, "=x.json");
  EXPECT_EQ(split_input("n=dir/x=y.json").path, "dir/x=y.json");
}

}  // namespace

namespace {

// A serve document as `extmem probe serve --json` writes it, one session, the peer given.
std::string serve_document(const json& peer) {
  return json{{"schema", "extmem-serve-result"},
              {"endpoint", "tcp:0.0.0.0:7000"},
              {"side_context", {{"hostname", "node1"}}},
              {"sessions", json::array({{{"session", 1}, {"run_id", "0123456789abcdef"}, {"peer", peer},
                                         {"halves", json::array()}, {"refused", nullptr}, {"ended", ""}}})}}
      .dump();
}

TEST(ReportParse, AServedPeerWithoutAUidIsUnidentifiedNotRoot) {
  auto named = extmem::report::parse_document_of("s.json", serve_document({{"uid", 1000}, {"pid", 0}}));
  ASSERT_TRUE(named) << named.error().message();
  ASSERT_EQ(named->served.size(), 1u);
  EXPECT_TRUE(named->served[0].peer_identified);
  EXPECT_EQ(named->served[0].peer_uid, 1000u);
  // --listen-any: a TCP peer of another host or network namespace; its uid is null.
  auto unnamed = extmem::report::parse_document_of(
      "s.json", serve_document({{"uid", nullptr}, {"pid", 0}, {"address", "10.0.0.2:41000"}}));
  ASSERT_TRUE(unnamed) << unnamed.error().message();
  ASSERT_EQ(unnamed->served.size(), 1u);
  EXPECT_FALSE(unnamed->served[0].peer_identified);
}

}  // namespace
