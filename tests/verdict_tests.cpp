// Tests of extmem::decide() and extmem::trace() (docs/probe.md, "Legs and the verdict").
// The leg rule is checked against an independently written table over every
// combination of leg states for one to three legs.
#include "extmem/core/verdict.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace {

using extmem::decide;
using extmem::Leg;
using extmem::RouteFacts;
using extmem::RowStatus;
using extmem::trace;

// A leg state is four bits: decisive, attempted, read_ok, write_ok.
constexpr unsigned kLegStates = 16;

Leg leg_from_bits(unsigned bits, std::size_t index) {
  Leg leg;
  leg.name = "leg" + std::to_string(index);
  leg.decisive = (bits & 1u) != 0;
  leg.attempted = (bits & 2u) != 0;
  leg.read_ok = (bits & 4u) != 0;
  leg.write_ok = (bits & 8u) != 0;
  return leg;
}

// Every combination of `count` legs, each in one of the 16 states.
std::vector<std::vector<Leg>> all_combinations(std::size_t count) {
  std::size_t total = 1;
  for (std::size_t i = 0; i < count; ++i) total *= kLegStates;
  std::vector<std::vector<Leg>> out;
  out.reserve(total);
  for (std::size_t code = 0; code < total; ++code) {
    std::vector<Leg> legs;
    std::size_t rest = code;
    for (std::size_t i = 0; i < count; ++i) {
      legs.push_back(leg_from_bits(static_cast<unsigned>(rest % kLegStates), i));
      rest /= kLegStates;
    }
    out.push_back(std::move(legs));
  }
  return out;
}

// The rule of docs/probe.md, written without looking at decide(): OK iff there
// is a decisive leg and every decisive leg round-tripped; PARTIAL iff some but
// not all did; FAIL otherwise. Informational legs are not looked at.
RowStatus expected_status(const std::vector<Leg>& legs) {
  bool any_decisive = false, all_rt = true, any_rt = false;
  for (const Leg& l : legs) {
    if (!l.decisive) continue;
    any_decisive = true;
    const bool rt = l.attempted && l.read_ok && l.write_ok;
    all_rt = all_rt && rt;
    any_rt = any_rt || rt;
  }
  if (any_decisive && all_rt) return RowStatus::ok;
  if (any_rt) return RowStatus::partial;
  return RowStatus::fail;
}

// "{D att r w}{i - - -}": the leg states, for failure messages.
std::string describe(const std::vector<Leg>& legs) {
  std::string out;
  for (const Leg& l : legs)
    out += std::string("{") + (l.decisive ? "D" : "i") + (l.attempted ? " att" : " -") + (l.read_ok ? " r" : " -") +
           (l.write_ok ? " w" : " -") + "}";
  return out;
}

class VerdictTable : public ::testing::TestWithParam<std::size_t> {};

// decide() agrees with the independent rule for every combination of leg states.
TEST_P(VerdictTable, StatusMatchesRuleForEveryCombination) {
  std::size_t checked = 0;
  for (const auto& legs : all_combinations(GetParam())) {
    const RowStatus want = expected_status(legs);
    const RowStatus got = decide(RouteFacts{}, legs).status;
    ASSERT_EQ(extmem::to_string(got), std::string(extmem::to_string(want))) << describe(legs);
    ++checked;
  }
  std::size_t total = 1;
  for (std::size_t i = 0; i < GetParam(); ++i) total *= kLegStates;
  EXPECT_EQ(checked, total);
}

// Removing every informational leg never changes the status.
TEST_P(VerdictTable, InformationalLegsNeverChangeTheStatus) {
  for (const auto& legs : all_combinations(GetParam())) {
    std::vector<Leg> decisive_only;
    for (const Leg& l : legs)
      if (l.decisive) decisive_only.push_back(l);
    ASSERT_EQ(extmem::to_string(decide(RouteFacts{}, legs).status),
              std::string(extmem::to_string(decide(RouteFacts{}, decisive_only).status)))
        << describe(legs);
  }
}

// why is empty exactly when the status is OK.
TEST_P(VerdictTable, WhyIsEmptyExactlyWhenOk) {
  for (const auto& legs : all_combinations(GetParam())) {
    const auto v = decide(RouteFacts{}, legs);
    ASSERT_EQ(v.why.empty(), v.status == RowStatus::ok) << describe(legs) << " why=" << v.why;
  }
}

// The why of a non-OK verdict names every decisive leg that did not round-trip, and no informational leg.
TEST_P(VerdictTable, WhyNamesExactlyTheFailingDecisiveLegs) {
  for (const auto& legs : all_combinations(GetParam())) {
    const auto v = decide(RouteFacts{}, legs);
    if (v.status == RowStatus::ok) continue;
    bool any_decisive = false;
    for (const Leg& l : legs) any_decisive = any_decisive || l.decisive;
    if (!any_decisive) continue;  // the "no decisive leg" reason names no leg
    for (const Leg& l : legs) {
      const bool rt = l.attempted && l.read_ok && l.write_ok;
      const bool named = v.why.find(l.name + ":") != std::string::npos;
      ASSERT_EQ(named, l.decisive && !rt) << describe(legs) << " why=" << v.why << " leg=" << l.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Verdict, VerdictTable, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "legs"; });

Leg rt_leg(std::string name, bool decisive = true) {
  Leg l;
  l.name = std::move(name);
  l.decisive = decisive;
  l.attempted = l.read_ok = l.write_ok = true;
  return l;
}

Leg failed_leg(std::string name, std::string step, std::string code, bool decisive = true) {
  Leg l;
  l.name = std::move(name);
  l.decisive = decisive;
  l.attempted = true;
  l.failed_step = std::move(step);
  l.code = std::move(code);
  return l;
}

// No legs at all is FAIL: a route that compared nothing is never OK.
TEST(VerdictRule, NoLegsIsFail) {
  const auto v = decide(RouteFacts{}, {});
  EXPECT_EQ(v.status, RowStatus::fail);
  EXPECT_FALSE(v.why.empty());
}

// Only informational legs, all round-tripped, is still FAIL.
TEST(VerdictRule, OnlyInformationalRoundTripsIsFail) {
  const auto v = decide(RouteFacts{}, {rt_leg("rawmmap", false), rt_leg("gpu", false)});
  EXPECT_EQ(v.status, RowStatus::fail);
}

// A leg flagged read_ok and write_ok but not attempted does not count as round-tripped.
TEST(VerdictRule, NotAttemptedLegDoesNotCountEvenWithOkFlags) {
  Leg l = rt_leg("vkimport");
  l.attempted = false;
  EXPECT_EQ(decide(RouteFacts{}, {l}).status, RowStatus::fail);
  EXPECT_EQ(decide(RouteFacts{}, {rt_leg("gpu"), l}).status, RowStatus::partial);
}

// skip wins over fatal, unsupported and legs, and its reason is the why.
TEST(VerdictPrecedence, SkipWinsOverEverything) {
  RouteFacts f;
  f.skip = "Android-only route";
  f.fatal = "child died: SIGSEGV in mmap";
  f.unsupported = "VK_KHR_external_memory_fd absent";
  const auto v = decide(f, {rt_leg("vkimport")});
  EXPECT_EQ(v.status, RowStatus::skip);
  EXPECT_EQ(v.why, "Android-only route");
}

// fatal wins over unsupported and over round-tripped legs: FAIL with the fatal text.
TEST(VerdictPrecedence, FatalWinsOverUnsupportedAndLegs) {
  RouteFacts f;
  f.fatal = "timeout in vkImportMemory";
  f.unsupported = "handle type not advertised";
  const auto v = decide(f, {rt_leg("vkimport"), rt_leg("gpu")});
  EXPECT_EQ(v.status, RowStatus::fail);
  EXPECT_EQ(v.why, "timeout in vkImportMemory");
}

// unsupported wins over legs, even when every leg round-tripped.
TEST(VerdictPrecedence, UnsupportedWinsOverLegs) {
  RouteFacts f;
  f.unsupported = "DMA_BUF not exportable";
  const auto v = decide(f, {rt_leg("vkimport")});
  EXPECT_EQ(v.status, RowStatus::unsupported);
  EXPECT_EQ(v.why, "DMA_BUF not exportable");
}

// unsupported also wins over failed legs (a decline of an unadvertised type is not a FAIL).
TEST(VerdictPrecedence, UnsupportedWinsOverFailedLegs) {
  RouteFacts f;
  f.unsupported = "declined unadvertised handle type";
  const auto v = decide(f, {failed_leg("vkimport", "vkAllocateMemory", "VK_ERROR_INVALID_EXTERNAL_HANDLE")});
  EXPECT_EQ(v.status, RowStatus::unsupported);
}

// A FAIL why carries the failing leg's name, step and driver code verbatim.
TEST(VerdictWhy, FailNamesStepAndCodeVerbatim) {
  const auto v = decide(RouteFacts{}, {failed_leg("vkimport", "vkAllocateMemory(import OPAQUE_FD)",
                                                  "VK_ERROR_INVALID_EXTERNAL_HANDLE")});
  ASSERT_EQ(v.status, RowStatus::fail);
  EXPECT_NE(v.why.find("vkimport"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("vkAllocateMemory(import OPAQUE_FD)"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("VK_ERROR_INVALID_EXTERNAL_HANDLE"), std::string::npos) << v.why;
}

// An errno code like "EPERM (1)" is carried unchanged, not reformatted.
TEST(VerdictWhy, ErrnoCodeCarriedUnchanged) {
  const auto v = decide(RouteFacts{}, {failed_leg("rawmmap", "mmap(MAP_SHARED)", "EPERM (1)")});
  EXPECT_NE(v.why.find("mmap(MAP_SHARED)"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("EPERM (1)"), std::string::npos) << v.why;
}

// A PARTIAL why names the failing decisive leg and not the one that round-tripped.
TEST(VerdictWhy, PartialNamesOnlyTheFailingLeg) {
  const auto v = decide(RouteFacts{}, {rt_leg("vkimport"), failed_leg("gpu", "vkQueueSubmit", "VK_ERROR_DEVICE_LOST")});
  ASSERT_EQ(v.status, RowStatus::partial);
  EXPECT_NE(v.why.find("gpu"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("vkQueueSubmit"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << v.why;
  EXPECT_EQ(v.why.find("vkimport"), std::string::npos) << v.why;
}

// A failing informational leg's step does not appear in the why of a FAIL caused by a decisive leg.
TEST(VerdictWhy, InformationalFailureNotInWhy) {
  const auto v = decide(RouteFacts{}, {failed_leg("rawmmap", "mmap", "EACCES (13)", false),
                                       failed_leg("vkimport", "vkGetMemoryFdKHR", "VK_ERROR_TOO_MANY_OBJECTS")});
  ASSERT_EQ(v.status, RowStatus::fail);
  EXPECT_EQ(v.why.find("EACCES"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("VK_ERROR_TOO_MANY_OBJECTS"), std::string::npos) << v.why;
}

// Every failing decisive leg appears in the why, in leg order.
TEST(VerdictWhy, AllFailingDecisiveLegsInOrder) {
  const auto v = decide(RouteFacts{}, {failed_leg("vkimport", "stepA", "CODE_A"), failed_leg("gpu", "stepB", "CODE_B")});
  const auto a = v.why.find("CODE_A"), b = v.why.find("CODE_B");
  ASSERT_NE(a, std::string::npos) << v.why;
  ASSERT_NE(b, std::string::npos) << v.why;
  EXPECT_LT(a, b) << v.why;
}

// A leg's note (e.g. payloadAt=4096) is carried into the why.
TEST(VerdictWhy, NoteCarried) {
  Leg l;
  l.name = "rawmmap";
  l.attempted = true;
  l.note = "payloadAt=4096";
  const auto v = decide(RouteFacts{}, {l});
  EXPECT_NE(v.why.find("payloadAt=4096"), std::string::npos) << v.why;
}

// The status names printed on RESULT lines are stable.
TEST(VerdictStatus, NamesAreStable) {
  EXPECT_STREQ(extmem::to_string(RowStatus::ok), "OK");
  EXPECT_STREQ(extmem::to_string(RowStatus::partial), "PARTIAL");
  EXPECT_STREQ(extmem::to_string(RowStatus::fail), "FAIL");
  EXPECT_STREQ(extmem::to_string(RowStatus::unsupported), "UNSUPPORTED");
  EXPECT_STREQ(extmem::to_string(RowStatus::skip), "SKIP");
}

// trace() reproduces the example of docs/probe.md, "The trace", exactly.
TEST(VerdictTrace, SpecExample) {
  Leg raw;
  raw.name = "rawmmap";
  raw.decisive = false;
  raw.attempted = true;
  EXPECT_EQ(trace({raw, rt_leg("vkimport"), rt_leg("gpu")}), "rawmmap[i]=no vkimport[D]=rt gpu[D]=rt");
}

// trace() of no legs is the empty string.
TEST(VerdictTrace, EmptyForNoLegs) { EXPECT_EQ(trace({}), ""); }

// trace() of one leg has no leading or trailing space.
TEST(VerdictTrace, SingleLegNoPadding) { EXPECT_EQ(trace({rt_leg("gpu")}), "gpu[D]=rt"); }

struct TraceCase {
  bool attempted, read_ok, write_ok;
  const char* value;
};

void PrintTo(const TraceCase& c, std::ostream* os) {
  *os << "attempted=" << c.attempted << " read_ok=" << c.read_ok << " write_ok=" << c.write_ok << " -> " << c.value;
}

class VerdictTraceValue : public ::testing::TestWithParam<TraceCase> {};

// Each leg state maps to its trace value: rt, read-only, write-only, no, notrun.
TEST_P(VerdictTraceValue, MapsStateToValue) {
  const TraceCase c = GetParam();
  Leg l;
  l.name = "x";
  l.attempted = c.attempted;
  l.read_ok = c.read_ok;
  l.write_ok = c.write_ok;
  EXPECT_EQ(l.trace_value(), c.value);
  EXPECT_EQ(trace({l}), std::string("x[D]=") + c.value);
}

INSTANTIATE_TEST_SUITE_P(
    Verdict, VerdictTraceValue,
    ::testing::Values(TraceCase{true, true, true, "rt"}, TraceCase{true, true, false, "read-only"},
                      TraceCase{true, false, true, "write-only"}, TraceCase{true, false, false, "no"},
                      TraceCase{false, false, false, "notrun"}, TraceCase{false, true, true, "notrun"},
                      TraceCase{false, true, false, "notrun"}, TraceCase{false, false, true, "notrun"}),
    [](const auto& info) {
      const TraceCase& c = info.param;
      return std::string(c.attempted ? "Attempted" : "NotAttempted") + (c.read_ok ? "Read" : "NoRead") +
             (c.write_ok ? "Write" : "NoWrite");
    });

}  // namespace
