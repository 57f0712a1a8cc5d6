// The warm-worker engine against --isolate=route on the real driver (lavapipe
// here): the same verdicts, legs and failing steps in both modes, with and
// without the fault hooks; a worker that dies mid-route fails only that route
// and is replaced; --jobs does not change answers; each route leaves its worker
// as it found it (fds, live Vulkan/GL objects), and the check sees a leak.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/row_names.h"
#include "support/run_shell.h"
#include "support/temp_files.h"
#include "support/row_names.h"

namespace {

using nlohmann::json;

struct ProbeRun {
  int code = -1;
  std::string out;
  json doc;
};

// `extmem probe ARGS --json=…` with `env`; the JSON document of the run.
ProbeRun probe(const std::string& args, const std::string& env = {}) {
  extmem::test::TempDir dir;
  const std::string path = dir.file("run.json");
  extmem::test::ShellRun r = extmem::test::run_extmem("probe " + args + " --json=" + path, env);
  ProbeRun out{r.code, r.out, json()};
  out.doc = json::parse(extmem::test::slurp(path), nullptr, false);
  return out;
}

// Whether a row ended because a half crashed, hung or broke the protocol: its
// surviving half's legs then carry whichever socket error it met first (EPIPE on a
// send, ECONNRESET on a receive), a race of the crash's timing in either mode.
bool ended_by_a_dead_half(const std::string& why) {
  for (const char* p : {"child died:", "timeout after", "malformed", "no report from the route", "unexpected message"})
    if (why.rfind(p, 0) == 0) return true;
  return false;
}

// What must agree between two runs of a row: status, why, and (unless a half died)
// every leg's value, failing step and code.
std::map<std::string, json> answers(const json& doc) {
  std::map<std::string, json> m;
  if (!doc.is_object() || !doc.contains("rows")) return m;
  for (const json& r : doc["rows"]) {
    json legs = json::array();
    if (!ended_by_a_dead_half(r["why"].get<std::string>()))
      for (const json& l : r["legs"]) legs.push_back({l["name"], l["value"], l["failed_step"], l["code"]});
    m[r["row"]] = {{"status", r["status"]}, {"why", r["why"]}, {"legs", legs}};
  }
  return m;
}

void expect_same_answers(const ProbeRun& a, const ProbeRun& b, const std::string& what) {
  ASSERT_FALSE(a.doc.is_discarded()) << what << "\n" << a.out;
  ASSERT_FALSE(b.doc.is_discarded()) << what << "\n" << b.out;
  EXPECT_EQ(a.code, b.code) << what;
  const auto x = answers(a.doc), y = answers(b.doc);
  ASSERT_EQ(x.size(), y.size()) << what;
  for (const auto& [row, answer] : x) EXPECT_EQ(answer, y.at(row)) << what << ": row " << row;
}

const json* row_of(const json& doc, const std::string& name) {
  for (const json& r : doc["rows"])
    if (r["row"] == name) return &r;
  return nullptr;
}

// Every row: warm workers and fresh processes give the same answers.
TEST(ProbeWorkers, DefaultAndIsolateRouteAgreeOnEveryRow) {
  ProbeRun warm = probe(""), isolated = probe("--isolate=route");
  expect_same_answers(warm, isolated, "no fault");
  EXPECT_EQ(answers(warm.doc).size(), extmem::test::kRowNames.size());  // every row of the table answered
}

// Phase A as the warm worker sends it (the parent loads no driver) reads the same as
// phase A found in the parent itself (--isolate=route): Vulkan, EGL/GLES and CUDA.
TEST(ProbeWorkers, PhaseAFromTheWorkerEqualsPhaseAInTheParent) {
  ProbeRun warm = probe("--only=T3-memfd-cross-process"), isolated = probe("--only=T3-memfd-cross-process --isolate=route");
  ASSERT_FALSE(warm.doc.is_discarded()) << warm.out;
  ASSERT_FALSE(isolated.doc.is_discarded()) << isolated.out;
  for (const char* part : {"vulkan", "gles", "cuda"}) EXPECT_EQ(warm.doc[part], isolated.doc[part]) << part;
  EXPECT_FALSE(warm.doc["vulkan"]["devices"].empty());
}

// Under the fault hooks — a hang, an abort, a crash, an exit, a malformed frame, and
// the faults routes inject themselves — both modes still agree, row by row. The route
// timeout leaves room for a fresh process's start under the sanitizers on a loaded
// 2-core machine (at 2 s an isolated server was once still starting when it fired).
TEST(ProbeWorkers, ModesAgreeUnderFaultHooks) {
  // Each fault and the exit code it leads to (no sealing is UNSUPPORTED: exit 0).
  const std::vector<std::pair<std::string, int>> faults = {
      {"T3-memfd-cross-process:server:mmap:hang", 1},     {"T1-opaque-fd:client:vkAllocateMemory:abort", 1},
      {"T1-opaque-fd:server:serve:segv", 1},              {"T1-opaque-fd:server:post-export fd sanity:exit", 1},
      {"T3-memfd-sealed:client:send the sealed:garbage", 1}, {"T1-opaque-fd:server:post-export fd sanity:closefd", 1},
      {"T3-memfd-sealed:client:memfd_create:nosealing", 0},
  };
  // The timeout ends the hang fault; it must also outlast a loaded machine's way to the
  // other faults' steps (4 s did not, beside two compilers: a timeout in one mode, the crash in the other).
  const std::string only = "--only=T1-opaque-fd,T3-memfd-cross-process,T3-external-memory-host,T3-memfd-sealed --timeout=8";
  for (const auto& [f, code] : faults) {
    const std::string env = "EXTMEM_TEST_FAULT='" + f + "' ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_abort=0";
    ProbeRun warm = probe(only, env), isolated = probe(only + " --isolate=route", env);
    expect_same_answers(warm, isolated, f);
    EXPECT_EQ(warm.code, code) << f << "\n" << warm.out;
  }
}

// A worker killed mid-route (SIGSEGV at a named step) fails that route naming the
// signal and the step; the next route on the lane runs on a new worker and passes.
TEST(ProbeWorkers, CrashedWorkerFailsItsRouteAndIsReplaced) {
  ProbeRun r = probe("--jobs=1 --only=T1-opaque-fd,T3-memfd-cross-process,T3-memfd-sealed",
                "EXTMEM_TEST_FAULT=T3-memfd-cross-process:client:serve:segv "
                "ASAN_OPTIONS=detect_leaks=0:handle_segv=0");
  ASSERT_FALSE(r.doc.is_discarded()) << r.out;
  const json* before = row_of(r.doc, "T1-opaque-fd");
  const json* crashed = row_of(r.doc, "T3-memfd-cross-process");
  const json* after = row_of(r.doc, "T3-memfd-sealed");
  ASSERT_TRUE(before && crashed && after) << r.out;
  EXPECT_EQ((*before)["status"], "OK") << r.out;
  EXPECT_EQ((*crashed)["status"], "FAIL") << r.out;
  EXPECT_NE((*crashed)["why"].get<std::string>().find("child died: SIGSEGV in client: "), std::string::npos) << r.out;
  EXPECT_FALSE((*crashed)["worker_hygiene"].contains("client")) << "the crashed half sent no done frame";
  EXPECT_EQ((*after)["status"], "OK") << r.out;
  const int old_pid = (*before)["worker_hygiene"]["client"]["pid"], new_pid = (*after)["worker_hygiene"]["client"]["pid"];
  EXPECT_NE(old_pid, new_pid) << "the client worker was replaced";
  EXPECT_EQ((*before)["worker_hygiene"]["server"]["pid"], (*after)["worker_hygiene"]["server"]["pid"])
      << "the server worker, whose half ended normally, was kept";
}

// Routes side by side give the same answers as one at a time.
TEST(ProbeWorkers, JobsOneAndFourAgree) {
  ProbeRun one = probe("--jobs=1"), four = probe("--jobs=4");
  expect_same_answers(one, four, "--jobs=1 vs --jobs=4");
}

// Every route leaves its worker as it found it: same fds, no live Vulkan or GL objects.
TEST(ProbeWorkers, EveryRouteLeavesItsWorkerClean) {
  ProbeRun r = probe("--jobs=1");
  ASSERT_FALSE(r.doc.is_discarded()) << r.out;
  int halves = 0;
  for (const json& row : r.doc["rows"]) {
    if (!row.contains("worker_hygiene")) continue;
    for (const auto& [role, h] : row["worker_hygiene"].items()) {
      ++halves;
      EXPECT_TRUE(h["clean"].get<bool>()) << row["row"] << " " << role << ": " << h.dump();
    }
  }
  EXPECT_GE(halves, 10) << r.out;
}

// Negative control: a half that leaves an fd open is caught, with the fd's target.
TEST(ProbeWorkers, HygieneCheckSeesALeakedFd) {
  ProbeRun r = probe("--jobs=1 --only=T3-memfd-cross-process", "EXTMEM_TEST_FAULT=T3-memfd-cross-process:server:mmap:leakfd");
  ASSERT_FALSE(r.doc.is_discarded()) << r.out;
  const json* row = row_of(r.doc, "T3-memfd-cross-process");
  ASSERT_NE(row, nullptr);
  const json& h = (*row)["worker_hygiene"]["server"];
  EXPECT_FALSE(h["clean"].get<bool>()) << h.dump();
  ASSERT_TRUE(h.contains("left_open")) << h.dump();
  EXPECT_NE(h["left_open"].dump().find("/dev/null"), std::string::npos) << h.dump();
}

}  // namespace

namespace {

// A route marked retires_worker (T1-opaque-fd-foreign-fd: it hands the driver fds it
// never exported, which left NVIDIA's next allocation failing in that process) runs on a
// warm worker after every other row of its lane, whatever its place in the table, and
// that worker is retired after it: no route runs there afterwards. Read off the trace.
TEST(ProbeWorkers, RetiringRouteRunsLastAndRetiresItsWorker) {
  for (const char* jobs : {"--jobs=1", "--jobs=2"}) {
    extmem::test::TempDir dir;
    const std::string trace = dir.file("trace");
    ProbeRun r = probe(std::string(jobs) + " --only=T1-opaque-fd,T1-opaque-fd-foreign-fd,T3-memfd-cross-process,T3-memfd-sealed",
                       "EXTMEM_PROBE_TRACE=" + trace);
    ASSERT_TRUE(r.doc.is_object()) << r.out;
    EXPECT_EQ(r.code, 0) << r.out;
    const json* foreign = row_of(r.doc, "T1-opaque-fd-foreign-fd");
    ASSERT_NE(foreign, nullptr) << r.out;
    EXPECT_EQ((*foreign)["status"], "OK") << r.out;
    ASSERT_TRUE(foreign->contains("worker_hygiene")) << foreign->dump();  // a warm worker ran it
    const std::string pid = std::to_string((*foreign)["worker_hygiene"]["server"]["pid"].get<long>());

    // "<seconds> <pid> <event>" lines: the worker's jobs, in the order it ran them.
    std::istringstream lines(extmem::test::slurp(trace));
    std::vector<std::string> on_worker;
    std::size_t rows_before = 0;
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      std::string when, who, event;
      f >> when >> who;
      std::getline(f >> std::ws, event);
      if (who == pid && event.rfind("job start ", 0) == 0) on_worker.push_back(event.substr(10));
      if (event.rfind("row start ", 0) == 0 && event != "row start T1-opaque-fd-foreign-fd") ++rows_before;
    }
    EXPECT_EQ(rows_before, 3u) << jobs;
    // Every step a half announces is a trace line too (where a route's time goes).
    EXPECT_NE(extmem::test::slurp(trace).find(" step T1-opaque-fd server: "), std::string::npos) << jobs;
    ASSERT_FALSE(on_worker.empty()) << jobs << " " << extmem::test::slurp(trace);
    EXPECT_EQ(on_worker.back(), "T1-opaque-fd-foreign-fd server") << jobs << " " << extmem::test::slurp(trace);
    if (std::string(jobs) == "--jobs=1") EXPECT_GE(on_worker.size(), 2u) << extmem::test::slurp(trace);  // it was warm
  }
}

}  // namespace
