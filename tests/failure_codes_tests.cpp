// Tests of the failure-code derivation (extmem/probe/failure_codes.h), the run's
// health (extmem/probe/health.h) and the fleet writers' exact contracts
// (extmem/probe/fleet_write.h); the real probe runs in tests/scripts/probe_fleet.py.
#include "extmem/probe/failure_codes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "extmem/probe/fleet_write.h"
#include "extmem/probe/health.h"
#include "probe/route_report.h"
#include "support/temp_files.h"

namespace {

using extmem::Basis;
using extmem::ErrorKind;
using extmem::RouteFacts;
using extmem::RowStatus;
using extmem::Verdict;
namespace probe = extmem::probe;

std::string id_of(const Verdict& v) {
  const probe::FailureCode* c = probe::failure_code(v);
  return c ? std::string(c->id) : "none";
}

// Ids are unique and of the documented shape; each code's status is one a row can have.
TEST(FailureCodes, TableIdsUniqueAndWellFormed) {
  std::set<std::string> ids;
  for (const probe::FailureCode& c : probe::failure_codes()) {
    EXPECT_TRUE(ids.insert(std::string(c.id)).second) << c.id;
    ASSERT_EQ(c.id.size(), 5u) << c.id;
    EXPECT_EQ(c.id.substr(0, 2), "EM");
    // The hundreds digit is the class: 1 config .. 5 harness.
    EXPECT_EQ(c.id[2] - '1', static_cast<int>(c.klass)) << c.id;
    EXPECT_NE(c.status, RowStatus::ok) << c.id;
    EXPECT_FALSE(c.action.empty()) << c.id;
  }
}

// An OK row has no code.
TEST(FailureCodes, OkHasNone) { EXPECT_EQ(probe::failure_code(Verdict{RowStatus::ok, ""}), nullptr); }

// Every stop kind decides its FAIL code through decide(), from the typed kind alone.
TEST(FailureCodes, FailByKind) {
  const std::pair<ErrorKind, const char*> expected[] = {
      {ErrorKind::invalid_argument, "EM104"}, {ErrorKind::os, "EM503"},         {ErrorKind::driver, "EM305"},
      {ErrorKind::mismatch, "EM306"},         {ErrorKind::protocol, "EM504"},   {ErrorKind::timeout, "EM505"},
      {ErrorKind::peer_closed, "EM506"}};
  for (auto [kind, id] : expected) {
    RouteFacts facts;
    extmem::stop_row(facts, kind, "same text for every kind");
    const Verdict v = extmem::decide(facts, {});
    EXPECT_EQ(v.status, RowStatus::fail);
    EXPECT_EQ(id_of(v), id) << extmem::to_string(kind);
  }
}

// stop_row's non-FAIL kinds, and text-only facts, get their status's codes.
TEST(FailureCodes, SkipUnsupportedAndUntyped) {
  RouteFacts no_driver, unsupported, fatal_text, skip_text;
  extmem::stop_row(no_driver, ErrorKind::no_driver, "x");
  extmem::stop_row(unsupported, ErrorKind::unsupported, "x");
  fatal_text.fatal = "x";
  skip_text.skip = "x";
  EXPECT_EQ(id_of(extmem::decide(no_driver, {})), "EM301");
  EXPECT_EQ(id_of(extmem::decide(unsupported, {})), "EM302");
  EXPECT_EQ(id_of(extmem::decide(fatal_text, {})), "EM501");
  EXPECT_EQ(id_of(extmem::decide(skip_text, {})), "EM103");
  EXPECT_EQ(id_of(extmem::decide(RouteFacts{.skip = "x", .stop_basis = Basis::not_selected}, {})), "EM101");
  EXPECT_EQ(id_of(extmem::decide(RouteFacts{.skip = "x", .stop_basis = Basis::not_built}, {})), "EM102");
  // A refused pidfd fetch: UNSUPPORTED from an os error is the deployment's permission.
  EXPECT_EQ(id_of(extmem::decide(RouteFacts{.unsupported = "x", .stop_kind = ErrorKind::os}, {})), "EM201");
}

// The legs decide FAIL, PARTIAL, no decisive leg and stale words apart.
TEST(FailureCodes, ByLegs) {
  extmem::Leg rt{.name = "a", .attempted = true, .read_ok = true, .write_ok = true};
  extmem::Leg no{.name = "b", .attempted = true};
  EXPECT_EQ(id_of(extmem::decide({}, {no})), "EM303");
  EXPECT_EQ(id_of(extmem::decide({}, {rt, no})), "EM304");
  EXPECT_EQ(id_of(extmem::decide({}, {})), "EM502");
  RouteFacts soaked;
  soaked.soak = extmem::SoakCount{.stale = 1, .words = 10, .rounds = 1};
  EXPECT_EQ(id_of(extmem::decide(soaked, {rt})), "EM401");
}

// The kind crosses the wire from a route half to the parent, and a bad one is refused.
TEST(FailureCodes, StopKindRoundTripsInReport) {
  probe::RouteReport r;
  extmem::stop_row(r.facts, ErrorKind::timeout, "waited");
  auto back = probe::decode_report(probe::encode(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->facts.stop_kind, ErrorKind::timeout);
  std::string bad = probe::encode(r);
  bad.replace(bad.find("\"timeout\""), 9, "\"sleepy\"");
  EXPECT_FALSE(probe::decode_report(bad).ok());
}

// The NPD line is cut to 80 bytes, never inside a UTF-8 character, and is one line.
TEST(FleetWrite, NpdLineBoundedOnCharacterBoundary) {
  probe::Health h;
  h.ok = false;
  h.problems.push_back({"T1-opaque-fd", probe::find_failure_code("EM303"), "FAIL", "",
                        "vkGetMemoryFdKHR \xC3\xA9\xC3\xA9\xC3\xA9 " + std::string(100, 'x') + "\nsecond", ""});
  const std::string line = probe::npd_line(h);
  EXPECT_LE(line.size(), probe::kNpdMaxOutput);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("T1-opaque-fd FAIL EM303 at vkGetMemoryFdKHR", 0), 0u) << line;
  // 47 bytes would end inside the second é (bytes 46-47): the line stops before it, at 46.
  const std::string short_line = probe::npd_line(h, 47);
  EXPECT_EQ(short_line, "T1-opaque-fd FAIL EM303 at vkGetMemoryFdKHR \xC3\xA9");
}

// A baseline line with more matching qualifiers wins; a non-matching one is ignored.
TEST(Health, BaselineMostSpecificMatchWins) {
  extmem::test::TempDir dir;
  std::ofstream(dir.file("b")) << "T1-opaque-fd OK\nT1-opaque-fd FAIL driver=llvmpipe\n"
                                  "T1-opaque-fd PARTIAL device=H200 driver=llvmpipe\n";
  auto b = probe::read_baseline(dir.file("b"));
  ASSERT_TRUE(b.ok()) << b.error().message();
  extmem::vk::DeviceInfo dev;
  dev.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  dev.driver_name = "llvmpipe";
  ASSERT_NE(probe::expectation_for(*b, "T1-opaque-fd", dev), nullptr);
  EXPECT_EQ(probe::expectation_for(*b, "T1-opaque-fd", dev)->status, RowStatus::fail);
  dev.driver_name = "NVIDIA";
  EXPECT_EQ(probe::expectation_for(*b, "T1-opaque-fd", dev)->status, RowStatus::ok);
  EXPECT_EQ(probe::expectation_for(*b, "T1-dma-buf", dev), nullptr);
}

// Malformed baselines are refused with the file, the line and what is accepted.
TEST(Health, BaselineErrorsNameLine) {
  extmem::test::TempDir dir;
  std::ofstream(dir.file("b")) << "# header\n\nT1-opaque-fd ok\n";
  auto b = probe::read_baseline(dir.file("b"));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::invalid_argument);
  EXPECT_EQ(b.error().step, "--expect");
  EXPECT_EQ(b.error().detail.rfind(dir.file("b") + ":3: unknown status \"ok\"; accepted: ", 0), 0u) << b.error().detail;
}

}  // namespace
