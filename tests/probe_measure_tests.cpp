// `extmem probe --measure`, `--memory-type`, `--junit` on the machine's Vulkan
// driver (lavapipe in CI): figures for every round-tripped leg with their
// baselines, verdicts identical with and without --measure, JUnit valid
// against tests/data/junit.xsd (xmllint), and bad values of every new option.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shared_run.h"
#include "support/temp_files.h"

#include "extmem/probe/probe.h"
#include "extmem/probe/routes.h"
#include "probe/parent/junit.h"
#include "probe/measure_codec.h"
#include "probe/worker/measure.h"
#include "probe/parent/measure_row.h"
#include "ucx/ucx.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = EXTMEM_BINARY;
const std::string kSource = EXTMEM_SOURCE_DIR;

struct Out {
  int code = -1;
  std::string out, err;
};

using extmem::test::slurp;
using Dir = extmem::test::TempDir;  // a fresh directory per test, removed afterwards

// Runs `args` through /bin/sh (arguments are ours, no user text) with stdout and
// stderr captured into DIR/NAME.out and DIR/NAME.err, the exit status into DIR/NAME.code.
void sh_into(const std::string& dir, const std::string& name, const std::string& args) {
  const std::string base = dir + "/" + name;
  std::string cmd = args + " >" + base + ".out 2>" + base + ".err";
  int st = std::system(cmd.c_str());
  std::ofstream(base + ".code") << (WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

// What sh_into() left in DIR under NAME.
Out read_sh(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name;
  Out o;
  std::istringstream(slurp(base + ".code")) >> o.code;
  o.out = slurp(base + ".out");
  o.err = slurp(base + ".err");
  return o;
}

Out sh(const std::string& args) {
  Dir d;
  sh_into(d.path.string(), "run", args);
  return read_sh(d.path.string(), "run");
}

std::string probe() { return kBinary + " probe"; }

// One --measure --json run and one plain --json run of the same rows, each made
// once per ctest invocation and read by every test below (support/shared_run.h).
struct Runs {
  std::string dir;  // m.json, p.json and the two runs' output
  Out measured, plain;
  json measured_doc, plain_doc;
  std::string file(const std::string& name) const { return dir + "/" + name; }
};

// The measured and the plain run of `only` (extra probe options), shared under `key`.
std::unique_ptr<Runs> shared_runs(const std::string& key, const std::string& only, const std::string& measure_options) {
  auto r = std::make_unique<Runs>();
  r->dir = extmem::test::shared_run_dir(key, [&](const std::string& dir) {
    sh_into(dir, "measured", probe() + only + " --measure" + measure_options + " --json=" + dir + "/m.json");
    sh_into(dir, "plain", probe() + only + " --json=" + dir + "/p.json");
  });
  r->measured = read_sh(r->dir, "measured");
  r->plain = read_sh(r->dir, "plain");
  r->measured_doc = json::parse(slurp(r->file("m.json")), nullptr, false);
  r->plain_doc = json::parse(slurp(r->file("p.json")), nullptr, false);
  return r;
}

const Runs& runs() {
  // 16 MiB copies: the figures' checks do not need the default 64 MiB.
  static const std::unique_ptr<Runs> r = shared_runs("probe-measure", " --no-gles", " --measure-repeats=3 --measure-size=16777216");
  return *r;
}

bool measured_route(const std::string& row) {
  for (const extmem::probe::RouteInfo& r : extmem::probe::routes())
    if (row == r.row || row.rfind(r.row + "@mt", 0) == 0) return r.measured;
  return true;
}

// The image rows (Vulkan and GL importers) copy images, not an allocation of --measure-size.
bool image_row(const std::string& row) {
  return row.rfind("T4-image-opaque-fd", 0) == 0 || row.rfind("T4-gles-image-", 0) == 0;
}

bool figure_ok(const json& f) {
  return f.is_object() && f.value("n", 0) == 3 && f.value("min", -1.0) > 0 && f.value("min", 0.0) <= f.value("median", 0.0) &&
         f.value("median", 0.0) <= f.value("max", 0.0);
}

TEST(ProbeMeasure, EveryRoundTrippedLegHasFiguresAndBaseline) {
  const Runs& r = runs();
  ASSERT_TRUE(r.measured_doc.is_object()) << r.measured.err;
  int measured_legs = 0;
  for (const json& row : r.measured_doc["rows"]) {
    bool any_rt = false;
    for (const json& leg : row["legs"]) any_rt = any_rt || leg["value"] == "rt";
    // A route the table marks unmeasured (the foreign-fd row's rt legs are refusals that
    // move no bytes) gets no measuring run.
    if (!any_rt || !measured_route(row["row"])) {
      EXPECT_FALSE(row.contains("measure")) << row["row"];
      continue;
    }
    ASSERT_TRUE(row.contains("measure")) << row["row"];
    const json& m = row["measure"];
    ASSERT_FALSE(m.contains("error")) << m.dump();
    // The image rows copy images, not an allocation of --measure-size: ImageRowsMeasure below.
    if (image_row(row["row"])) continue;
    EXPECT_EQ(m["size"], 16u << 20);
    // UCX RMA moves the allocation with put and get, no CPU mapping: its figures stand beside memcpy's.
    if (row["row"] == "T5-ucx-rma") {
      const json& f = m["legs"]["rma"];
      for (const char* key : {"rma_put_gbps", "rma_get_gbps", "memcpy_gbps"}) EXPECT_TRUE(figure_ok(f[key])) << key << f.dump();
      EXPECT_GT(f.value("rma_put_ratio", 0.0), 0) << f.dump();
      EXPECT_GT(f.value("rma_get_ratio", 0.0), 0) << f.dump();
      ++measured_legs;
      continue;
    }
    EXPECT_TRUE(figure_ok(m["baseline"]["cpu_write_gbps"])) << m.dump();
    EXPECT_TRUE(figure_ok(m["baseline"]["cpu_read_gbps"])) << m.dump();
    for (const json& leg : row["legs"]) {
      if (leg["value"] != "rt") {
        EXPECT_FALSE(m["legs"].contains(leg["name"].get<std::string>())) << row["row"] << " " << leg["name"];
        continue;
      }
      ++measured_legs;
      const std::string name = leg["name"];
      ASSERT_TRUE(m["legs"].contains(name)) << row["row"] << " " << name << " " << m.dump();
      const json& f = m["legs"][name];
      // A leg is measured by what it is: a CPU mapping or a GPU access; either way some figure is there.
      bool cpu = f.contains("cpu_read_gbps"), gpu = f.contains("gpu_out_gbps");
      EXPECT_TRUE(cpu || gpu) << row["row"] << " " << name << " " << f.dump();
      if (cpu) {
        EXPECT_TRUE(figure_ok(f["cpu_read_gbps"]) && figure_ok(f["cpu_write_gbps"])) << f.dump();
        EXPECT_GT(f.value("cpu_read_ratio", 0.0), 0) << f.dump();
        EXPECT_GT(f.value("cpu_write_ratio", 0.0), 0) << f.dump();
      }
      if (gpu) {
        EXPECT_TRUE(figure_ok(f["gpu_out_gbps"]) && figure_ok(f["gpu_in_gbps"])) << f.dump();
        EXPECT_TRUE(figure_ok(f["gpu_baseline_gbps"])) << "lavapipe has a DEVICE_LOCAL type: " << f.dump();
        // Lavapipe's queue family has 64 timestamp bits (period 1 ns): every GPU figure is GPU-timed and says so.
        for (const char* key : {"gpu_out_gbps", "gpu_in_gbps", "gpu_baseline_gbps"})
          EXPECT_EQ(f[key].value("clock", std::string()), "vk-timestamp") << row["row"] << " " << name << " " << key;
        EXPECT_EQ(f.value("gpu_clock", std::string()), "vk-timestamp") << f.dump();
        EXPECT_EQ(f["gpu_timestamp"].value("valid_bits", 0), 64) << f.dump();
        EXPECT_FALSE(f.contains("gpu_clock_fallback")) << f.dump();
        // The same copies through a compute shader, on the same clock.
        EXPECT_FALSE(f.contains("shader_error")) << f.dump();
        for (const char* key : {"shader_out_gbps", "shader_in_gbps", "shader_baseline_gbps"}) {
          EXPECT_TRUE(figure_ok(f[key])) << row["row"] << " " << name << " " << key << " " << f.dump();
          EXPECT_EQ(f[key].value("clock", std::string()), "vk-timestamp") << row["row"] << " " << name << " " << key;
        }
      }
    }
  }
  EXPECT_GE(measured_legs, 8);  // T1 vkimport+gpu, T3 mmap legs, host imports, sealed
  // The latencies: export on T1, import and map on the Vulkan import leg, mmap of a received fd.
  for (const json& row : r.measured_doc["rows"]) {
    if (row["row"] != "T1-opaque-fd") continue;
    EXPECT_TRUE(figure_ok(row["measure"]["route"]["export_us"])) << row["measure"].dump();
    EXPECT_TRUE(figure_ok(row["measure"]["route"]["mmap_us"])) << row["measure"].dump();
    EXPECT_TRUE(figure_ok(row["measure"]["legs"]["vkimport"]["import_us"])) << row["measure"].dump();
    EXPECT_TRUE(figure_ok(row["measure"]["legs"]["vkimport"]["map_us"])) << row["measure"].dump();
  }
}

TEST(ProbeMeasure, TextHasAMeasureLinePerMeasuredRow) {
  const Runs& r = runs();
  std::istringstream lines(r.measured.out);
  std::string line, previous;
  int measure_lines = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("  measure: ", 0) == 0) {
      ++measure_lines;
      EXPECT_EQ(previous.rfind("RESULT ", 0), 0u) << line;
      EXPECT_NE(previous.find(" OK "), std::string::npos) << previous;
      EXPECT_TRUE(line.find("of private") != std::string::npos || line.find("of memcpy") != std::string::npos) << line;
    }
    previous = line;
  }
  // T1-opaque-fd, the four OK T3 rows, the two Vulkan T4 image rows and the two GL image rows (group t4:
  // --no-gles keeps them), the two T5 (UCX) rows where UCX is installed (scripts/deps.sh)
  EXPECT_EQ(measure_lines, extmem::ucx::version() ? 11 : 9) << r.measured.out;
}

TEST(ProbeMeasure, VerdictsIdenticalWithAndWithoutMeasure) {
  const Runs& r = runs();
  EXPECT_EQ(r.measured.code, r.plain.code);
  ASSERT_EQ(r.measured_doc["rows"].size(), r.plain_doc["rows"].size());
  for (std::size_t i = 0; i < r.plain_doc["rows"].size(); ++i) {
    const json &a = r.measured_doc["rows"][i], &b = r.plain_doc["rows"][i];
    EXPECT_EQ(a["row"], b["row"]);
    EXPECT_EQ(a["status"], b["status"]) << a["row"];
    EXPECT_EQ(a["trace"], b["trace"]) << a["row"];
    EXPECT_EQ(a["why"], b["why"]) << a["row"];
    EXPECT_EQ(a["detail"], b["detail"]) << a["row"];  // the verdict run is at --size, untouched by measuring
  }
}

// A measuring run that crashes (EXTMEM_TEST_FAULT at a step only the measuring run has)
// leaves the row's verdict alone and says why there are no figures.
TEST(ProbeMeasure, CrashWhileMeasuringKeepsTheVerdict) {
  Dir d;
  Out o = sh("EXTMEM_TEST_FAULT='T1-opaque-fd:client:measure CPU bandwidth:abort' " + probe() +
             " --only=T1-opaque-fd --measure --measure-size=1048576 --json=" + d.file("c.json"));
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("RESULT T1-opaque-fd OK "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  measure: no figures: child died: SIGABRT in client: measure CPU bandwidth through vkimport"),
            std::string::npos)
      << o.out;
  json doc = json::parse(slurp(d.file("c.json")));
  for (const json& row : doc["rows"]) {
    if (row["row"] != "T1-opaque-fd") continue;
    EXPECT_EQ(row["status"], "OK");
    EXPECT_EQ(row["measure"]["run_status"], "FAIL");
  }
}

Out validate(const std::string& document) {
  return sh("python3 -c 'import json,sys,jsonschema\n"
            "s=json.load(open(sys.argv[1]));d=json.load(open(sys.argv[2]))\n"
            "c=jsonschema.validators.validator_for(s);c.check_schema(s)\n"
            "e=list(c(s,format_checker=c.FORMAT_CHECKER).iter_errors(d))\n"
            "[print(list(x.absolute_path),x.message[:200]) for x in e];sys.exit(1 if e else 0)' " +
            kSource + "/docs/probe-result.schema.json " + document);
}

// The schema change is additive: documents written before --measure and --memory-type still validate.
TEST(ProbeMeasure, OlderDocumentsStillValidate) {
  for (const char* f : {"nvidia-h200-580.json", "nvidia-h200-580-soak.json"}) {
    Out v = validate(kSource + "/docs/results/" + f);
    EXPECT_EQ(v.code, 0) << f << v.out << v.err;
  }
}

TEST(ProbeMeasure, JsonWithMeasureValidatesAgainstSchema) {
  Out v = validate(runs().file("m.json"));
  EXPECT_EQ(v.code, 0) << v.out << v.err;
}

// A --memory-type=all document (with @mt rows) validates too.
TEST(ProbeMemoryType, JsonWithMtRowsValidatesAgainstSchema) {
  Dir d;
  sh(probe() + " --only-t1 --no-gles --memory-type=all --measure --measure-size=1048576 --json=" + d.file("mt.json"));
  Out v = validate(d.file("mt.json"));
  EXPECT_EQ(v.code, 0) << v.out << v.err;
}

TEST(ProbeMeasure, BadValuesAreUsageErrors) {
  struct Case {
    const char* args;
    const char* says;
  } cases[] = {
      {"--measure-size=1000", "--measure-size"},        {"--measure-size=1048577", "multiple of 4096"},
      {"--measure-size=2147483648", "1073741824"},      {"--measure-size=-5", "--measure-size"},
      {"--measure-size=abc", "--measure-size"},         {"--measure-repeats=0", "1 to 100"},
      {"--measure-repeats=101", "1 to 100"},            {"--measure-repeats=x", "--measure-repeats"},
      {"--memory-type=banana", "auto, all"},            {"--memory-type=-1", "--memory-type"},
      {"--memory-type=31", "HOST_VISIBLE"},             {"--memory-type=", "--memory-type"},
      {"--junit=/nonexistent-dir/x.xml", "--junit"},
  };
  for (const Case& c : cases) {
    Out o = sh(probe() + " " + c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.out << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << c.args << ": " << o.err;
    EXPECT_EQ(o.out.find("RESULT"), std::string::npos) << c.args;
  }
}

TEST(ProbeMemoryType, AllAddsOneRowPerHostVisibleTypeAndKeepsTheAutoRow) {
  Dir d;
  Out o = sh(probe() + " --only-t1 --memory-type=all --json=" + d.file("all.json"));
  ASSERT_TRUE(o.code == 0 || o.code == 1) << o.err;
  json doc = json::parse(slurp(d.file("all.json")));
  std::vector<int> host_visible;
  const json& dev = doc["vulkan"]["devices"][doc["vulkan"]["selected"].get<int>()];
  for (const json& t : dev["memory_types"])
    if (t["flags"].get<unsigned>() & 0x2) host_visible.push_back(t["index"]);
  ASSERT_FALSE(host_visible.empty());
  for (const extmem::probe::RouteInfo& route : extmem::probe::routes()) {
    if (!route.memory_type_twins) continue;
    const char* base = route.row.c_str();
    std::vector<std::string> names;
    for (const json& row : doc["rows"])
      if (row["row"].get<std::string>().rfind(base, 0) == 0 &&
          (row["row"] == base || row["row"].get<std::string>()[std::strlen(base)] == '@'))
        names.push_back(row["row"]);
    ASSERT_EQ(names.size(), host_visible.size() + 1) << base;
    EXPECT_EQ(names[0], base);
    for (std::size_t i = 0; i < host_visible.size(); ++i)
      EXPECT_EQ(names[i + 1], std::string(base) + extmem::probe::memory_type_suffix(host_visible[i]));
  }
  // The @mt row of the type auto picks has auto's verdict, and its exporter really used that type.
  for (const json& row : doc["rows"]) {
    if (row["row"] != "T1-opaque-fd@mt" + std::to_string(host_visible[0])) continue;
    EXPECT_EQ(row["status"], "OK") << row.dump();
    bool said = false;
    for (const json& d : row["detail"])
      said = said || d.get<std::string>().find("memoryType=" + std::to_string(host_visible[0]) + " ") != std::string::npos;
    EXPECT_TRUE(said) << row["detail"].dump();
  }
}

TEST(ProbeMemoryType, AutoKeepsTodaysRowNames) {
  Out o = sh(probe() + " --only-t1 --memory-type=auto");
  EXPECT_EQ(o.out.find("@mt"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("RESULT T1-opaque-fd OK"), std::string::npos) << o.out;
}

TEST(ProbeJunit, ValidatesAgainstJunitXsdWithOneTestcasePerRow) {
  Dir d;
  Out o = sh(probe() + " --measure --measure-size=1048576 --measure-repeats=2 --junit=" + d.file("r.xml"));
  ASSERT_TRUE(o.code == 0 || o.code == 1) << o.err;
  Out v = sh("xmllint --noout --schema " + kSource + "/tests/data/junit.xsd " + d.file("r.xml"));
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  std::string xml = slurp(d.file("r.xml"));
  std::size_t testcases = 0, results = 0;
  for (std::size_t p = 0; (p = xml.find("<testcase ", p)) != std::string::npos; ++p) ++testcases;
  for (std::size_t p = 0; (p = o.out.find("RESULT ", p)) != std::string::npos; ++p) ++results;
  EXPECT_EQ(testcases, results);
  // FAIL rows (the GLES rows on lavapipe) carry <failure>, SKIP and UNSUPPORTED <skipped>, OK neither.
  EXPECT_NE(xml.find("name=\"T1-gles-memobj-fd-cross-proc\""), std::string::npos);
  if (o.out.find("RESULT T1-gles-memobj-fd-cross-proc FAIL") != std::string::npos)
    EXPECT_NE(xml.find("<failure type=\"FAIL\" message=\"glgpu:"), std::string::npos) << xml;
  // Each UNSUPPORTED row's testcase is <skipped> with the status: whichever rows the driver refuses.
  std::istringstream lines(o.out);
  std::size_t unsupported = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::string mark = " UNSUPPORTED ";
    if (line.rfind("RESULT ", 0) != 0 || line.find(mark) == std::string::npos) continue;
    ++unsupported;
    const std::string row = line.substr(7, line.find(' ', 7) - 7);
    const std::size_t testcase = xml.find("name=\"" + row + "\" time=");
    ASSERT_NE(testcase, std::string::npos) << row << "\n" << xml;
    const std::string element = xml.substr(testcase, xml.find("</testcase>", testcase) - testcase);
    EXPECT_NE(element.find("<skipped message=\"UNSUPPORTED: "), std::string::npos) << line << "\n" << element;
  }
  EXPECT_GT(unsupported, 0u) << "lavapipe refuses some rows (the S1 or dma-buf ones)\n" << o.out;
  EXPECT_NE(xml.find("measure: "), std::string::npos);
}

// Negative control: the XSD bites (a testcase without a name, an unknown status element).
TEST(ProbeJunit, XsdRejectsBrokenDocuments) {
  Dir d;
  std::ofstream(d.file("bad1.xml")) << "<testsuites><testsuite name=\"x\" tests=\"1\"><testcase classname=\"a\"/>"
                                       "</testsuite></testsuites>";
  std::ofstream(d.file("bad2.xml")) << "<testsuites><testsuite name=\"x\" tests=\"1\"><testcase name=\"a\" "
                                       "classname=\"b\"><maybe/></testcase></testsuite></testsuites>";
  for (const char* f : {"bad1.xml", "bad2.xml"}) {
    Out v = sh("xmllint --noout --schema " + kSource + "/tests/data/junit.xsd " + d.file(f));
    EXPECT_NE(v.code, 0) << f << v.err;
  }
}

TEST(ProbeJunit, EscapesTextAndDropsBytesXmlForbids) {
  extmem::probe::RowResult r;
  r.row = "T1-opaque-fd";
  r.verdict = {extmem::RowStatus::fail, "step <a> & \"b\" \x01 end"};
  std::string xml = extmem::probe::junit_xml({r}, "dev & <gpu>");
  EXPECT_NE(xml.find("message=\"step &lt;a&gt; &amp; &quot;b&quot; \xEF\xBF\xBD end\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("hostname=\"dev &amp; &lt;gpu&gt;\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
}

TEST(MeasureFigure, MedianMinMax) {
  using extmem::probe::Figure;
  using extmem::probe::measure::figure;
  EXPECT_EQ(figure({3, 1, 2}), (Figure{.median = 2, .min = 1, .max = 3, .n = 3}));
  EXPECT_EQ(figure({4, 1, 3, 2}), (Figure{.median = 2.5, .min = 1, .max = 4, .n = 4}));
  EXPECT_EQ(figure({}), Figure{});
}

// A row's measure text line from the JSON form of a half's figures (which the codec decodes strictly).
static std::string line_of(const json& figures) {
  auto m = extmem::probe::decode_measurement(figures, "test");
  EXPECT_TRUE(static_cast<bool>(m)) << (m ? "" : m.error().message());
  return m ? extmem::probe::measure_line(extmem::probe::RowMeasure{.figures = *m}) : std::string();
}

TEST(MeasureRow, KeepsOnlyLegsThatRoundTrippedInTheVerdictRun) {
  extmem::probe::RowResult verdict, measuring;
  extmem::Leg rt{"vkimport", true};
  rt.read_ok = rt.write_ok = true;
  extmem::Leg no{"rawmmap", false};
  verdict.legs = {no, rt};
  measuring.verdict.status = extmem::RowStatus::ok;
  measuring.measure = extmem::probe::RowMeasure{
      .figures = {.size = 1, .repeats = 1, .legs = {{"vkimport", {.map_us = extmem::probe::Figure{}}}, {"rawmmap", {}}}}};
  json m = extmem::probe::to_json(extmem::probe::row_measure(verdict, measuring));
  EXPECT_TRUE(m["legs"].contains("vkimport"));
  EXPECT_EQ(m["legs"]["vkimport"]["map_us"], (json{{"n", 0}}));
  EXPECT_FALSE(m["legs"].contains("rawmmap"));
  EXPECT_EQ(m["run_status"], "OK");
  EXPECT_EQ(m["baseline"], json::object());
  measuring.measure.reset();
  measuring.verdict = {extmem::RowStatus::fail, "timeout"};
  EXPECT_EQ(extmem::probe::to_json(extmem::probe::row_measure(verdict, measuring)),
            (json{{"run_status", "FAIL"}, {"error", "timeout"}}));
}

// ---- the T4 image rows' image copy figures (lavapipe) ----

// One --measure run and one plain run of the two image rows, shared by the image tests.
using ImageRuns = Runs;
const ImageRuns& image_runs() {
  static const std::unique_ptr<ImageRuns> r =
      shared_runs("image-rows-measure", " --only=T4-image-opaque-fd,T4-image-opaque-fd@linear", " --measure-repeats=3");
  return *r;
}

const json* row_of(const json& doc, const std::string& name) {
  for (const json& row : doc["rows"])
    if (row["row"] == name) return &row;
  return nullptr;
}

// Both rows' vkimage leg has the four image copy figures, positive, GPU-timed (lavapipe has
// 64 timestamp bits) and saying so, the ratios, the batch, the bytes of one copy (256x256x4),
// and the image came back intact.
TEST(ImageRowsMeasure, VkimageHasImageCopyFiguresAgainstAPrivateImage) {
  const ImageRuns& r = image_runs();
  ASSERT_TRUE(r.measured_doc.is_object()) << r.measured.out << r.measured.err;
  for (const char* name : {"T4-image-opaque-fd", "T4-image-opaque-fd@linear"}) {
    const json* row = row_of(r.measured_doc, name);
    ASSERT_NE(row, nullptr) << name;
    ASSERT_EQ((*row)["status"], "OK") << row->dump();
    ASSERT_TRUE(row->contains("measure")) << name;
    const json& m = (*row)["measure"];
    EXPECT_EQ(m["run_status"], "OK") << m.dump();
    ASSERT_TRUE(m["legs"].contains("vkimage")) << m.dump();
    EXPECT_FALSE(m["legs"].contains("cpumap")) << "informational, never round-trips: " << m.dump();
    const json& f = m["legs"]["vkimage"];
    EXPECT_FALSE(f.contains("image_error")) << f.dump();
    for (const char* key : {"image_out_gbps", "image_in_gbps", "image_private_out_gbps", "image_private_in_gbps"}) {
      EXPECT_TRUE(figure_ok(f[key])) << name << " " << key << " " << f.dump();
      EXPECT_EQ(f[key].value("clock", std::string()), "vk-timestamp") << name << " " << key;
    }
    EXPECT_GT(f.value("image_out_ratio", 0.0), 0) << f.dump();
    EXPECT_GT(f.value("image_in_ratio", 0.0), 0) << f.dump();
    EXPECT_EQ(f.value("gpu_clock", std::string()), "vk-timestamp") << f.dump();
    EXPECT_FALSE(f.contains("gpu_clock_fallback")) << f.dump();
    EXPECT_GE(f.value("image_copies_per_sample", 0), 1) << f.dump();
    EXPECT_LE(f.value("image_copies_per_sample", 0), 256) << f.dump();
    EXPECT_EQ(f.value("image_copy_bytes", 0u), 256u * 256u * 4u) << f.dump();
    EXPECT_EQ(f.value("image_extent", std::string()), "256x256") << f.dump();
    EXPECT_EQ(f.value("image_restored", false), true) << f.dump();
  }
}

// The measuring run changed nothing a verdict shows for the rows `names`: same exit code,
// status, trace, why, legs and detail; the plain run carries no figures.
void expect_verdicts_unchanged(const ImageRuns& r, std::initializer_list<const char*> names) {
  EXPECT_EQ(r.measured.code, 0) << r.measured.out;
  EXPECT_EQ(r.measured.code, r.plain.code);
  for (const char* name : names) {
    const json *a = row_of(r.measured_doc, name), *b = row_of(r.plain_doc, name);
    ASSERT_TRUE(a != nullptr && b != nullptr) << name;
    for (const char* key : {"status", "trace", "why", "legs", "detail"}) EXPECT_EQ((*a)[key], (*b)[key]) << name << " " << key;
    EXPECT_FALSE(b->contains("measure")) << name;
  }
}

// --measure changes no status, trace, why or detail of the image rows.
TEST(ImageRowsMeasure, VerdictIdenticalWithAndWithoutMeasure) {
  expect_verdicts_unchanged(image_runs(), {"T4-image-opaque-fd", "T4-image-opaque-fd@linear"});
}

// The text line under each image row names both directions, their clock and the private baseline.
TEST(ImageRowsMeasure, TextLineHasBothDirectionsAgainstPrivate) {
  const ImageRuns& r = image_runs();
  std::istringstream lines(r.measured.out);
  std::string line, previous;
  int image_lines = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("  measure: vkimage: ", 0) == 0) {
      ++image_lines;
      EXPECT_EQ(previous.rfind("RESULT T4-image-opaque-fd", 0), 0u) << previous;
      for (const char* part : {"image-out=", "image-in=", "(vk-timestamp) (x", " of private ", "image=256x256 copies-per-sample="})
        EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
    }
    previous = line;
  }
  EXPECT_EQ(image_lines, 2) << r.measured.out;
}

// --image-size sets the bytes of each copy.
TEST(ImageRowsMeasure, ImageSizeSetsTheCopyBytes) {
  Dir d;
  Out o = sh(probe() + " --only=T4-image-opaque-fd --image-size=96x40 --measure --measure-repeats=3 --json=" +
             d.file("s.json"));
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  json doc = json::parse(slurp(d.file("s.json")), nullptr, false);
  const json* row = row_of(doc, "T4-image-opaque-fd");
  ASSERT_NE(row, nullptr) << o.out;
  const json& f = (*row)["measure"]["legs"]["vkimage"];
  EXPECT_EQ(f.value("image_copy_bytes", 0u), 96u * 40u * 4u) << f.dump();
  EXPECT_EQ(f.value("image_extent", std::string()), "96x40") << f.dump();
  EXPECT_TRUE(figure_ok(f["image_out_gbps"])) << f.dump();
}

TEST(ImageRowsMeasure, JsonValidatesAgainstSchema) {
  Out v = validate(image_runs().file("m.json"));
  EXPECT_EQ(v.code, 0) << v.out << v.err;
}

// ---- the GL image rows' image copy figures (lavapipe, GL through zink: --gl-driver=auto) ----

constexpr const char* kGlImageRows[] = {"T4-gles-image-same-proc", "T4-gles-image-cross-proc"};

// One --measure run and one plain run of the two GL image rows, shared by the tests below.
const ImageRuns& gl_image_runs() {
  static const std::unique_ptr<ImageRuns> r =
      shared_runs("gles-image-rows-measure", " --only=T4-gles-image-same-proc,T4-gles-image-cross-proc", " --measure-repeats=3");
  return *r;
}

// Both rows' glimage leg has the four figures, positive, each naming its clock (the GL timer
// query, or the wall clock with the reason), the ratios, the batch, the bytes of one copy,
// the copy entry point, and the texture came back intact (read by GL and by the owner).
TEST(GlesImageRowsMeasure, GlimageHasImageCopyFiguresAgainstAPrivateTexture) {
  const ImageRuns& r = gl_image_runs();
  ASSERT_TRUE(r.measured_doc.is_object()) << r.measured.out << r.measured.err;
  for (const char* name : kGlImageRows) {
    const json* row = row_of(r.measured_doc, name);
    ASSERT_NE(row, nullptr) << name;
    ASSERT_EQ((*row)["status"], "OK") << row->dump();
    ASSERT_TRUE(row->contains("measure")) << name;
    const json& m = (*row)["measure"];
    EXPECT_EQ(m["run_status"], "OK") << m.dump();
    ASSERT_TRUE(m["legs"].contains("glimage")) << m.dump();
    const json& f = m["legs"]["glimage"];
    EXPECT_FALSE(f.contains("image_error")) << f.dump();
    const std::string clock = f.value("gpu_clock", std::string());
    EXPECT_TRUE(clock == "gl-time-elapsed" || clock == "wall") << f.dump();
    // The wall clock only as the labelled fallback.
    if (clock == "wall") EXPECT_TRUE(f.contains("gpu_clock_fallback")) << f.dump();
    if (!f.contains("gpu_clock_fallback")) EXPECT_EQ(clock, "gl-time-elapsed") << f.dump();
    for (const char* key : {"image_out_gbps", "image_in_gbps", "image_private_out_gbps", "image_private_in_gbps"}) {
      EXPECT_TRUE(figure_ok(f[key])) << name << " " << key << " " << f.dump();
      const std::string c = f[key].value("clock", std::string());
      EXPECT_TRUE(c == "gl-time-elapsed" || c == "wall") << name << " " << key << " " << f.dump();
    }
    EXPECT_GT(f.value("image_out_ratio", 0.0), 0) << f.dump();
    EXPECT_GT(f.value("image_in_ratio", 0.0), 0) << f.dump();
    EXPECT_GE(f.value("image_copies_per_sample", 0), 1) << f.dump();
    EXPECT_LE(f.value("image_copies_per_sample", 0), 256) << f.dump();
    EXPECT_EQ(f.value("image_copy_bytes", 0u), 256u * 256u * 4u) << f.dump();
    EXPECT_EQ(f.value("image_extent", std::string()), "256x256") << f.dump();
    EXPECT_EQ(f.value("image_copy", std::string()).rfind("glCopyImageSubData", 0), 0u) << f.dump();
    EXPECT_EQ(f.value("image_restored", false), true) << f.dump();
    EXPECT_FALSE(f.contains("image_layout")) << "GL has no image layouts: " << f.dump();
  }
}

// --measure changes no status, trace, why, leg or detail of the GL image rows.
TEST(GlesImageRowsMeasure, VerdictIdenticalWithAndWithoutMeasure) {
  expect_verdicts_unchanged(gl_image_runs(), {"T4-gles-image-same-proc", "T4-gles-image-cross-proc"});
}

// The text line under each GL image row names both directions, a clock and the private baseline.
TEST(GlesImageRowsMeasure, TextLineHasBothDirectionsAgainstPrivate) {
  const ImageRuns& r = gl_image_runs();
  std::istringstream lines(r.measured.out);
  std::string line, previous;
  int image_lines = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("  measure: glimage: ", 0) == 0) {
      ++image_lines;
      EXPECT_EQ(previous.rfind("RESULT T4-gles-image-", 0), 0u) << previous;
      for (const char* part : {"image-out=", "image-in=", " of private ", "image=256x256 copies-per-sample="})
        EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
      EXPECT_TRUE(line.find("(gl-time-elapsed) (x") != std::string::npos || line.find("(wall) (x") != std::string::npos)
          << line;
    }
    previous = line;
  }
  EXPECT_EQ(image_lines, 2) << r.measured.out;
}

TEST(GlesImageRowsMeasure, JsonValidatesAgainstSchema) {
  Out v = validate(gl_image_runs().file("m.json"));
  EXPECT_EQ(v.code, 0) << v.out << v.err;
}

}  // namespace

namespace copyleg {

using extmem::Error;
using extmem::ErrorKind;
using extmem::Result;
using extmem::probe::measure::Copy;
namespace measure = extmem::probe::measure;

// measure's log is process-wide: on for one test, off (and empty) after it.
struct Measuring {
  explicit Measuring(unsigned repeats) { measure::enable(repeats); }
  ~Measuring() { measure::disable(); }
  json leg(const std::string& name) const { return extmem::probe::to_json(*measure::collected())["legs"][name]; }
};

// A timer whose copies each take a fixed time per direction; records what it was asked.
struct Timer {
  std::map<Copy, double> per_copy{{Copy::save, 0.01}, {Copy::out, 0.5}, {Copy::in, 0.25}, {Copy::baseline, 0.1},
                                  {Copy::restore, 0.01}};
  std::optional<Copy> fails;
  std::vector<std::pair<Copy, unsigned>> calls;
  measure::CopyTimer fn() {
    return [this](Copy c, unsigned n) -> Result<measure::Timed> {
      calls.emplace_back(c, n);
      if (fails == c) return Error{"cuMemcpyDtoD", ErrorKind::driver, "CUDA_ERROR_ILLEGAL_ADDRESS", {}};
      return measure::Timed{per_copy[c] * n, measure::clocks::cuda_event};
    };
  }
};

TEST(MeasureCopyLeg, FiguresFromTheTimerSaveFirstRestoreLast) {
  Measuring m(3);
  Timer t;
  measure::copy_leg("cudaimport", 1'000'000'000, true, t.fn());
  json e = m.leg("cudaimport");
  EXPECT_DOUBLE_EQ(e["gpu_out_gbps"]["median"].get<double>(), 2.0) << e.dump();
  EXPECT_DOUBLE_EQ(e["gpu_in_gbps"]["median"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(e["gpu_baseline_gbps"]["median"].get<double>(), 10.0);
  EXPECT_EQ(e["gpu_out_gbps"]["n"], 3);
  EXPECT_EQ(e["gpu_copies_per_sample"], 1);  // 0.1 s per copy: no batching
  EXPECT_EQ(e["gpu_out_gbps"]["clock"], "cuda-event") << "each figure names the clock its samples came from";
  EXPECT_EQ(e["gpu_clock"], "cuda-event");
  EXPECT_FALSE(e.contains("gpu_error"));
  ASSERT_EQ(t.calls.size(), 1u + 1u + 3u * 3u + 1u);
  EXPECT_EQ(t.calls.front(), std::make_pair(Copy::save, 1u));
  EXPECT_EQ(t.calls[1], std::make_pair(Copy::baseline, 1u));
  EXPECT_EQ(t.calls.back(), std::make_pair(Copy::restore, 1u));
  EXPECT_EQ(measure::collected()->size, 1'000'000'000u);
}

TEST(MeasureCopyLeg, FastCopiesAreBatchedAndCountedInTheBandwidth) {
  Measuring m(2);
  Timer t;
  t.per_copy = {{Copy::save, 1e-3}, {Copy::out, 1e-3}, {Copy::in, 2e-3}, {Copy::baseline, 1e-3}, {Copy::restore, 1e-3}};
  measure::copy_leg("gpu", 1'000'000, false, t.fn());
  json e = m.leg("gpu");
  EXPECT_EQ(e["gpu_copies_per_sample"], 5);  // 5 ms / 1 ms
  EXPECT_EQ(t.calls[2], std::make_pair(Copy::out, 5u));
  EXPECT_DOUBLE_EQ(e["gpu_out_gbps"]["median"].get<double>(), 1.0);  // 5e6 bytes in 5 ms
  EXPECT_DOUBLE_EQ(e["gpu_in_gbps"]["median"].get<double>(), 0.5);
  EXPECT_FALSE(e.contains("gpu_baseline_gbps")) << "no baseline asked for";
  EXPECT_EQ(t.calls.back().first, Copy::restore);
}

TEST(MeasureCopyLeg, AFailingCopyIsNotedAndTheBytesStillGoBack) {
  Measuring m(3);
  Timer t;
  t.fails = Copy::in;
  measure::copy_leg("cudahost", 4096, true, t.fn());
  json e = m.leg("cudahost");
  EXPECT_TRUE(e.contains("gpu_out_gbps"));
  EXPECT_FALSE(e.contains("gpu_in_gbps"));
  EXPECT_FALSE(e.contains("gpu_baseline_gbps"));
  EXPECT_EQ(e["gpu_error"], "gpu_in_gbps: cuMemcpyDtoD -> CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(t.calls.back().first, Copy::restore);
}

TEST(MeasureCopyLeg, AFailedSaveMeasuresNothingAndRestoresNothing) {
  Measuring m(3);
  Timer t;
  t.fails = Copy::save;
  measure::copy_leg("cudaimport", 4096, true, t.fn());
  json e = m.leg("cudaimport");
  EXPECT_EQ(e["gpu_error"], "save the shared bytes: cuMemcpyDtoD -> CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_FALSE(e.contains("gpu_out_gbps"));
  EXPECT_EQ(t.calls.size(), 1u);
}

TEST(MeasureCopyLeg, NothingWhenNotMeasuring) {
  Timer t;
  measure::copy_leg("cudaimport", 4096, true, t.fn());
  measure::import_latency("cudaimport", [] { return Result<double>(1.0); });
  EXPECT_TRUE(t.calls.empty());
  EXPECT_FALSE(measure::collected().has_value());
}

TEST(MeasureImportLatency, MedianOfTheRepeatsAndTheFirstErrorStops) {
  {
    Measuring m(3);
    double next = 10;
    measure::import_latency("cudaimport", [&] { return Result<double>(next++); });
    EXPECT_EQ(m.leg("cudaimport")["import_us"], (json{{"median", 11.0}, {"min", 10.0}, {"max", 12.0}, {"n", 3}}));
  }
  {
    Measuring m(5);
    int calls = 0;
    measure::import_latency("cudahost", [&]() -> Result<double> {
      if (++calls == 3) return Error{"cuMemHostRegister(DEVICEMAP)", ErrorKind::driver, "CUDA_ERROR_OUT_OF_MEMORY", {}};
      return 2.0;
    });
    json e = m.leg("cudahost");
    EXPECT_EQ(calls, 3);
    EXPECT_EQ(e["import_us"]["n"], 2);
    EXPECT_EQ(e["import_error"], "cuMemHostRegister(DEVICEMAP) -> CUDA_ERROR_OUT_OF_MEMORY");
  }
}

// The text line reads a CUDA leg's figures like a Vulkan leg's.
TEST(MeasureRow, CudaLegFiguresReachTheTextLine) {
  json f = {{"median", 2.0}, {"min", 1.0}, {"max", 3.0}, {"n", 3}};
  json m = {{"size", 64u << 20}, {"repeats", 3}, {"baseline", json::object()}, {"route", json::object()},
            {"legs", {{"cudaimport", {{"gpu_out_gbps", f}, {"gpu_in_gbps", f}, {"gpu_baseline_gbps", f}, {"import_us", f}}}}}};
  std::string line = line_of(m);
  EXPECT_NE(line.find("cudaimport: gpu-out=2 GB/s [1-3] gpu-in=2 GB/s [1-3] gpu-device-local=2 GB/s [1-3] import=2 us [1-3]"),
            std::string::npos)
      << line;
}

// The GL leg on this machine's GL driver: copy-command and compute-shader figures, each naming its
// clock, and the row's verdict as without --measure.
TEST(ProbeMeasure, GlLegHasCommandAndShaderFigures) {
  Dir d;
  const std::string row = "T1-gles-memobj-fd-cross-proc";
  Out m = sh(probe() + " --measure --measure-repeats=3 --measure-size=4194304 --size=4194304 --only=" + row +
             " --json=" + d.file("m.json"));
  Out p = sh(probe() + " --size=4194304 --only=" + row + " --json=" + d.file("p.json"));
  const json md = json::parse(slurp(d.file("m.json")), nullptr, false), pd = json::parse(slurp(d.file("p.json")), nullptr, false);
  ASSERT_TRUE(md.is_object() && pd.is_object()) << m.err << p.err;
  auto row_of = [&](const json& doc) {
    for (const json& x : doc["rows"])
      if (x["row"] == row) return x;
    return json();
  };
  const json r = row_of(md), plain = row_of(pd);
  if (r.value("status", std::string()) != "OK") GTEST_SKIP() << "no GL import here: " << r.dump();
  EXPECT_EQ(r["status"], plain["status"]);
  EXPECT_EQ(r["legs"], plain["legs"]);
  const json& f = r["measure"]["legs"]["glgpu"];
  for (const char* key : {"gpu_out_gbps", "gpu_in_gbps", "gpu_baseline_gbps", "shader_out_gbps", "shader_in_gbps",
                          "shader_baseline_gbps"}) {
    EXPECT_TRUE(figure_ok(f[key])) << key << " " << f.dump();
    const std::string clock = f[key].value("clock", std::string());
    EXPECT_TRUE(clock == "gl-time-elapsed" || clock == "wall") << key << " " << clock;
  }
  EXPECT_FALSE(f.contains("shader_error")) << f.dump();
  EXPECT_NE(m.out.find("shader-device-local="), std::string::npos) << m.out;
}

// A GPU figure's clock is printed beside it, and the PCIe link's rate beside the copies in and
// out of shared host memory (not beside the device-local baseline, nor for device memory).
TEST(MeasureRow, ClockAndPcieLinkReachTheTextLine) {
  json f = {{"median", 2.0}, {"min", 1.0}, {"max", 3.0}, {"n", 3}, {"clock", "vk-timestamp"}};
  json m = {{"size", 64u << 20}, {"repeats", 3}, {"baseline", json::object()}, {"route", json::object()},
            {"pcie_link", {{"address", "0000:1b:00.0"}, {"speed_gts", 32.0}, {"width", 16}, {"gbps", 63.0}}},
            {"legs", {{"gpu", {{"gpu_out_gbps", f}, {"gpu_baseline_gbps", f}, {"gpu_shared_memory", "host"}}},
                      {"cudaimport", {{"gpu_out_gbps", f}, {"gpu_shared_memory", "device-local"}}}}}};
  std::string line = line_of(m);
  EXPECT_NE(line.find("gpu-out=2 GB/s [1-3] (vk-timestamp) [PCIe x16 32 GT/s: 63 GB/s]"), std::string::npos) << line;
  EXPECT_NE(line.find("gpu-device-local=2 GB/s [1-3] (vk-timestamp);"), std::string::npos) << line;
  EXPECT_NE(line.find("cudaimport: gpu-out=2 GB/s [1-3] (vk-timestamp);"), std::string::npos)
      << "device memory does not cross the link: " << line;
}

// The shader-copy figures print beside the copy-command ones, the link's rate only beside
// shader-out/-in of host memory, and a shader_error in words.
TEST(MeasureRow, ShaderFiguresAndErrorReachTheTextLine) {
  json f = {{"median", 2.0}, {"min", 1.0}, {"max", 3.0}, {"n", 3}, {"clock", "vk-timestamp"}};
  json m = {{"size", 64u << 20}, {"repeats", 3}, {"baseline", json::object()}, {"route", json::object()},
            {"pcie_link", {{"address", "0000:1b:00.0"}, {"speed_gts", 32.0}, {"width", 16}, {"gbps", 63.0}}},
            {"legs", {{"gpu", {{"shader_out_gbps", f}, {"shader_baseline_gbps", f}, {"gpu_shared_memory", "host"}}},
                      {"glgpu", {{"shader_error", "compute shaders: not in OpenGL ES 3.0"}}}}}};
  std::string line = line_of(m);
  EXPECT_NE(line.find("shader-out=2 GB/s [1-3] (vk-timestamp) [PCIe x16 32 GT/s: 63 GB/s]"), std::string::npos) << line;
  EXPECT_NE(line.find("shader-device-local=2 GB/s [1-3] (vk-timestamp);"), std::string::npos) << line;
  EXPECT_NE(line.find("glgpu: shader_error=\"compute shaders: not in OpenGL ES 3.0\""), std::string::npos) << line;
}

// The image figures print as image-out / image-in with their clock and the private image beside
// them, then the extent and the batch; an image_error is printed too.
TEST(MeasureRow, ImageFiguresReachTheTextLine) {
  json f = {{"median", 2.0}, {"min", 1.0}, {"max", 3.0}, {"n", 3}, {"clock", "wall"}};
  json p = {{"median", 4.0}, {"min", 3.0}, {"max", 5.0}, {"n", 3}, {"clock", "wall"}};
  json m = {{"size", 0}, {"repeats", 3}, {"baseline", json::object()}, {"route", json::object()},
            {"legs", {{"vkimage", {{"image_out_gbps", f}, {"image_private_out_gbps", p}, {"image_out_ratio", 0.5},
                                   {"image_in_gbps", f}, {"image_private_in_gbps", p}, {"image_in_ratio", 0.5},
                                   {"image_extent", "256x256"}, {"image_copies_per_sample", 17},
                                   {"gpu_clock_fallback", "queue family 0 has timestampValidBits=0"}}}}}};
  std::string line = line_of(m);
  EXPECT_NE(line.find("vkimage: image-out=2 GB/s [1-3] (wall) (x0.50 of private 4 GB/s [3-5]) "
                      "image-in=2 GB/s [1-3] (wall) (x0.50 of private 4 GB/s [3-5]) image=256x256 copies-per-sample=17 "
                      "gpu_clock_fallback=\"queue family 0 has timestampValidBits=0\";"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find(" MiB,"), std::string::npos) << "no allocation was measured: " << line;
  m["legs"]["vkimage"] = {{"image_error", "private image: vkCreateImage -> VK_ERROR_OUT_OF_DEVICE_MEMORY"}};
  line = line_of(m);
  EXPECT_NE(line.find("vkimage: image_error=\"private image: vkCreateImage -> VK_ERROR_OUT_OF_DEVICE_MEMORY\""),
            std::string::npos)
      << line;
}

// The line-code arithmetic behind pcie_link: Gen5 x16 and Gen2 x8.
TEST(MeasurePcie, TheoreticalRateAfterLineCoding) {
  EXPECT_NEAR(measure::pcie_gbps(32.0, 16), 63.015, 1e-3);  // 128b/130b
  EXPECT_NEAR(measure::pcie_gbps(5.0, 8), 4.0, 1e-9);       // 8b/10b
  EXPECT_EQ(measure::pcie_gbps(0, 16), 0);
}

}  // namespace copyleg
