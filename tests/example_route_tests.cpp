// The example route of docs/architecture.md ("How to add a route",
// examples/route/example_memfd.cpp), built into its own extmem command by
// tests/CMakeLists.txt: the one file registers the row, the probe runs it like
// every other (plan, workers, report, verdict, JSON), its declared fault makes
// it fail as it says, and the product's own table does not hold it.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/run_shell.h"
#include "support/temp_files.h"

namespace {

using nlohmann::json;

const std::string kRow = "X-example-memfd";

extmem::test::ShellRun run_example(const std::string& args, const std::string& env = {}) {
  return extmem::test::run_shell((env.empty() ? "" : "env " + env + " ") + std::string(EXTMEM_EXAMPLE_BINARY) + " " +
                                 args);
}

json row_of(const json& doc, const std::string& row) {
  for (const json& r : doc.value("rows", json::array()))
    if (r.value("row", "") == row) return r;
  return json();
}

TEST(ExampleRoute, OneFileRegistersTheRowAndItRunsOk) {
  extmem::test::TempDir dir;
  auto r = run_example("probe --only=" + kRow + " --json=" + dir.file("run.json"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("RESULT " + kRow + " OK mmap[D]=rt"), std::string::npos) << r.out;
  const json doc = json::parse(extmem::test::slurp(dir.file("run.json")), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  const json row = row_of(doc, kRow);
  ASSERT_TRUE(row.is_object()) << doc.dump();
  EXPECT_EQ(row["status"], "OK");
  // Both run modes: a fresh pair of processes gives the same answer as warm workers.
  auto fresh = run_example("probe --isolate=route --only=" + kRow);
  EXPECT_NE(fresh.out.find("RESULT " + kRow + " OK mmap[D]=rt"), std::string::npos) << fresh.out;
}

TEST(ExampleRoute, ItsDeclaredFaultIsCaught) {
  auto list = run_example("probe --list-routes=faults");
  EXPECT_NE(list.out.find("| `" + kRow + "` | `partialalias` | server |"), std::string::npos) << list.out;
  auto r = run_example("probe --only=" + kRow + " --size=65536",
                       "EXTMEM_TEST_FAULT=" + kRow + ":server:mmap:partialalias");
  EXPECT_NE(r.out.find("RESULT " + kRow + " FAIL mmap[D]=read-only"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unaliasedAt=32768"), std::string::npos) << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
}

TEST(ExampleRoute, TheProductDoesNotHoldIt) {
  auto product = extmem::test::run_extmem("probe --list-routes=row-pattern");
  EXPECT_EQ(product.code, 0) << product.out;
  EXPECT_EQ(product.out.find(kRow), std::string::npos) << product.out;
  auto example = run_example("probe --list-routes=row-pattern");
  EXPECT_NE(example.out.find("|" + kRow + ")"), std::string::npos) << "printed last, at place 9000: " << example.out;
}

}  // namespace
