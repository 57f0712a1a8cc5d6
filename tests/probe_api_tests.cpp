// The public probe API: find() returns phase A and the rows without printing,
// calls back in order, and the writers turn the same findings into the text,
// JSON and JUnit the CLI prints; options are refused in the library's words.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/probe_option_text.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/write.h"
#include "support/row_names.h"

namespace {

namespace probe = extmem::probe;

probe::ProbeOptions one_row(const std::string& row) {
  probe::ProbeOptions o;
  o.worker = EXTMEM_BINARY;  // the children are the real binary's child mode
  o.only = {row};
  return o;
}

// find() hands back every row with its legs, phase A first, and prints nothing.
TEST(ProbeApi, FindReturnsRowsAndCallsBackInOrder) {
  std::vector<std::string> events;
  probe::FindCallbacks cb;
  cb.phase_a = [&](const probe::PhaseA& a) { events.push_back("phase_a:" + a.device().name); };
  cb.row = [&](const probe::RowResult& r) { events.push_back(r.row); };
  testing::internal::CaptureStdout();
  auto found = probe::find(one_row("T3-memfd-cross-process"), cb);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  ASSERT_TRUE(found) << found.error().message();
  ASSERT_EQ(found->rows.size(), extmem::test::kRowNames.size());
  ASSERT_EQ(events.size(), found->rows.size() + 1);
  EXPECT_EQ(events[0].rfind("phase_a:", 0), 0u);
  for (std::size_t i = 0; i < found->rows.size(); ++i) {
    EXPECT_EQ(found->rows[i].row, extmem::test::kRowNames[i]);
    EXPECT_EQ(events[i + 1], found->rows[i].row);
  }
  const probe::RowResult* row = nullptr;
  for (const probe::RowResult& r : found->rows)
    if (r.row == "T3-memfd-cross-process") row = &r;
  ASSERT_NE(row, nullptr);
  const probe::RowResult& ran = *row;
  EXPECT_EQ(ran.verdict.status, extmem::RowStatus::ok) << ran.verdict.why;
  ASSERT_EQ(ran.legs.size(), 1u);
  EXPECT_EQ(ran.legs[0].name, "mmap");
  EXPECT_GT(ran.seconds, 0);
  EXPECT_EQ(found->rows[2].verdict.status, extmem::RowStatus::skip);
  EXPECT_EQ(found->rows[2].verdict.why, "not selected by --only");
  EXPECT_EQ(found->exit_code(), probe::kExitOk);
  EXPECT_FALSE(found->phase_a.vulkan.devices.empty());
}

// The writers consume the findings: the JSON rows are find()'s rows, the text has one RESULT line per row.
TEST(ProbeApi, WritersConsumeTheFindings) {
  probe::ProbeOptions o = one_row("T3-memfd-cross-process");
  auto found = probe::find(o);
  ASSERT_TRUE(found) << found.error().message();
  nlohmann::json doc = nlohmann::json::parse(probe::json_document(*found, o));
  ASSERT_EQ(doc["rows"].size(), found->rows.size());
  for (std::size_t i = 0; i < found->rows.size(); ++i) EXPECT_EQ(doc["rows"][i]["row"], found->rows[i].row);
  EXPECT_EQ(doc["exit_code"], found->exit_code());
  std::ostringstream text;
  for (const probe::RowResult& r : found->rows) probe::write_row(text, r);
  EXPECT_NE(text.str().find("RESULT T3-memfd-cross-process OK mmap[D]=rt"), std::string::npos) << text.str();
  EXPECT_NE(probe::junit_document(*found).find("name=\"T3-memfd-cross-process\""), std::string::npos);
}

// A bad option is an invalid_argument error naming the option and what is accepted; nothing runs.
TEST(ProbeApi, FindRefusesBadOptionsInTheLibrarysWords) {
  probe::ProbeOptions o = one_row("T3-memfd-cross-process");
  o.size = 4097;
  auto found = probe::find(o);
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().step, "--size");
  EXPECT_NE(found.error().detail.find("multiple of 4096"), std::string::npos) << found.error().detail;
  EXPECT_EQ(probe::exit_code_for(found.error()), probe::kExitUsage);
}

// The command's grammar (parse_probe_option) refuses non-numbers with the words validate() uses for
// out-of-range numbers: both take them from the library's table (kOptionWords).
TEST(ProbeApi, ParseOptionAndValidateShareTheirWords) {
  probe::ProbeOptions o;
  auto bad_text = extmem::cli::parse_probe_option(o, "--measure-repeats", "ten");
  ASSERT_FALSE(bad_text);
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--measure-repeats", "101"));
  auto bad_range = probe::validate(o);
  ASSERT_FALSE(bad_range);
  const std::string accepted = "a whole number from 1 to 100";
  EXPECT_NE(bad_text.error().detail.find(accepted), std::string::npos) << bad_text.error().detail;
  EXPECT_NE(bad_range.error().detail.find(accepted), std::string::npos) << bad_range.error().detail;
  EXPECT_EQ(probe::accepted_words("--measure-repeats"), accepted);
  // --jobs: 0 is the default, 65 is out of range, a sign is refused at parse time.
  probe::ProbeOptions j;
  EXPECT_TRUE(extmem::cli::parse_probe_option(j, "--jobs", "0"));
  EXPECT_TRUE(probe::validate(j));
  EXPECT_FALSE(extmem::cli::parse_probe_option(j, "--jobs", "-1"));
  ASSERT_TRUE(extmem::cli::parse_probe_option(j, "--jobs", "65"));
  EXPECT_FALSE(probe::validate(j));
  // A word option is typed once parsed: a word it does not know is refused there, naming what is accepted.
  probe::ProbeOptions i;
  auto isolate = extmem::cli::parse_probe_option(i, "--isolate", "process");
  ASSERT_FALSE(isolate);
  EXPECT_EQ(isolate.error().step, "--isolate");
  EXPECT_NE(isolate.error().detail.find("\"process\" is not accepted: route"), std::string::npos) << isolate.error().detail;
  ASSERT_TRUE(extmem::cli::parse_probe_option(i, "--isolate", "route"));
  EXPECT_EQ(i.isolate, probe::Isolation::route);
  ASSERT_TRUE(extmem::cli::parse_probe_option(i, "--fd-transport", "both"));
  EXPECT_EQ(i.fd_transport, probe::FdTransportChoice::both);
  EXPECT_FALSE(extmem::cli::parse_probe_option(i, "--fd-transport", "SCM"));
}

// --memory-type and --gl-driver are typed once parsed, as the other word options:
// the record holds no text a later step must parse again.
TEST(ProbeApi, MemoryTypeAndGlDriverAreTyped) {
  probe::ProbeOptions o;
  EXPECT_EQ(o.memory_type, probe::kDefaultMemoryType);
  EXPECT_EQ(probe::to_string(o.memory_type), "auto");
  EXPECT_STREQ(probe::to_string(o.gl_driver), "auto");
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--memory-type", "all"));
  EXPECT_EQ(o.memory_type.mode, probe::MemoryTypeChoice::Mode::all);
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--memory-type", "7"));
  EXPECT_EQ(o.memory_type, (probe::MemoryTypeChoice{probe::MemoryTypeChoice::Mode::index, 7}));
  EXPECT_EQ(probe::to_string(o.memory_type), "7");
  auto wide = extmem::cli::parse_probe_option(o, "--memory-type", "123");
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().detail.find("\"123\" is not accepted: auto, all, or a memory type INDEX (0..31)"),
            std::string::npos) << wide.error().detail;
  // Whether an index names a HOST_VISIBLE type is the device's to say, after phase A
  // (find() refuses it then, listing the device's types); the form alone passes.
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--memory-type", "40"));
  EXPECT_TRUE(probe::validate(o));
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--gl-driver", "llvmpipe"));
  EXPECT_EQ(o.gl_driver, probe::GlDriverRequest::llvmpipe);
  auto mesa = extmem::cli::parse_probe_option(o, "--gl-driver", "mesa");
  ASSERT_FALSE(mesa);
  EXPECT_EQ(mesa.error().kind, extmem::ErrorKind::invalid_argument);
  EXPECT_NE(mesa.error().detail.find("\"mesa\" is not accepted: auto"), std::string::npos) << mesa.error().detail;
}

// find() needs a worker executable and never starts the program that calls it
// in its place: a named one that is missing is a typed error, and nothing starts.
TEST(ProbeApi, FindWithoutAWorkerExecutableSaysWhereItLookedAndStartsNothing) {
  probe::ProbeOptions o = one_row("T3-memfd-cross-process");
  o.worker = "/nonexistent-extmem-dir/extmem";
  auto found = probe::find(o);
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().kind, extmem::ErrorKind::os);
  EXPECT_TRUE(found.error().is_errno(ENOENT)) << found.error().message();
  EXPECT_EQ(found.error().step, "find the worker executable");
  EXPECT_NE(found.error().detail.find("/nonexistent-extmem-dir/extmem: no such file"), std::string::npos)
      << found.error().detail;
  EXPECT_EQ(probe::exit_code_for(found.error()), probe::kExitCannotRun);
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // no child was started
  EXPECT_EQ(errno, ECHILD);
  // A directory is not a worker.
  o.worker = "/tmp";
  auto dir = probe::find_worker(o);
  ASSERT_FALSE(dir);
  EXPECT_TRUE(dir.error().is_errno(EACCES)) << dir.error().message();
  // Named and there: taken as named.
  o.worker = EXTMEM_BINARY;
  auto named = probe::find_worker(o);
  ASSERT_TRUE(named) << named.error().message();
  EXPECT_EQ(*named, EXTMEM_BINARY);
}

// Unnamed, the worker is the extmem installed beside the library, never this test program.
TEST(ProbeApi, AnUnnamedWorkerIsTheInstalledExtmemNeverTheCaller) {
  probe::ProbeOptions o;
  auto found = probe::find_worker(o);
  if (found) {
    EXPECT_NE(std::filesystem::canonical(*found), std::filesystem::canonical("/proc/self/exe")) << *found;
    EXPECT_EQ(std::filesystem::path(*found).filename(), "extmem");
    return;
  }
  EXPECT_EQ(found.error().step, "find the worker executable");
  EXPECT_NE(found.error().detail.find("installed beside the library"), std::string::npos) << found.error().detail;
  EXPECT_NE(found.error().detail.find("/bin/extmem"), std::string::npos) << found.error().detail;
}

}  // namespace
