// `extmem report`: probe documents from real runs on this machine's driver
// (lavapipe in CI) merged into the device x row matrix; malformed JSON and
// unknown schema versions are exit 2 with a message naming the file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/shared_run.h"
#include "support/temp_files.h"

#include "report/fleet.h"

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
  EXPECT_NE(o.out.find("| row | [1] NVIDIA H200 | [2] NVIDIA H200 | [3] llvmpipe"), std::string::npos) << o.out;
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

}  // namespace
