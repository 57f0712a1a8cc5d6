// Every option that takes a duration, in every subcommand, through the real
// `extmem` binary: one table, the same checks on each row. Its bounds are
// accepted, one nanosecond outside them and text outside the grammar is
// refused with exit 2, and the refusal is exactly parse_duration's one text
// for that option's bounds (docs/durations.md). A subcommand that adds a
// duration option adds its row here.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "extmem/core/duration.h"
#include "extmem/probe/probe.h"
#include "support/run_shell.h"

namespace {

using namespace std::chrono;
using extmem::DurationRange;

struct DurationOption {
  std::string option;                 ///< "--period"
  std::vector<std::string> before;    ///< the subcommand and what it needs besides the option
  std::vector<std::string> after;     ///< what follows the option (watch's COMMAND)
  DurationRange range;                ///< the bounds the option documents
  bool max_runs_briefly = true;       ///< whether a run at the upper bound ends by itself at once
  int stopped_code = 0;               ///< a second accepted exit code: the option's bound ending the run first
};

// poll with nothing to find: one round, then it stops at --duration.
const std::vector<std::string> kPollBase = {"poll", "--comm=extmem-no-such-process", "--match=size=4K",
                                            "--offset=0", "--when===0", "--set=1"};

std::vector<std::string> with(std::vector<std::string> v, const std::string& extra) {
  v.push_back(extra);
  return v;
}

const std::vector<DurationOption> kOptions = {
    {"--period", {"watch"}, {"--", "true"}, {milliseconds(1), hours(1)}},
    // 1ms can end before `true` does on a loaded machine: watch then stops it (SIGTERM) and exits 143.
    {"--duration", {"watch"}, {"--", "true"}, {milliseconds(1), hours(8784)}, true, 143},
    {"--min-seen", {"watch"}, {"--", "true"}, {nanoseconds(0), hours(8784)}},
    {"--warmup", {"watch"}, {"--", "true"}, {nanoseconds(0), hours(8784)}},
    {"--period", with(kPollBase, "--duration=1ms"), {}, {milliseconds(1), hours(1)}},
    // At 8784h poll would run for a year: the upper bound is checked by refusing one nanosecond more.
    {"--duration", kPollBase, {}, {milliseconds(1), hours(8784)}, false},
    // The probe's: --list-devices runs phase A and stops, so neither bound makes the run long
    // (a 1ms per-route limit would fail every row of a full run).
    {"--timeout", {"probe", "--list-devices"}, {}, extmem::probe::kTimeoutRange},
    {"--soak", {"probe", "--list-devices"}, {}, extmem::probe::kSoakRange},
};

// Single-quoted for the shell (the values are ours; none holds a quote).
std::string command_line(const DurationOption& o, const std::string& value) {
  std::string line;
  for (const std::string& a : o.before) line += "'" + a + "' ";
  line += "'" + o.option + "=" + value + "'";
  for (const std::string& a : o.after) line += " '" + a + "'";
  return line;
}

std::string label(const DurationOption& o) { return o.before.front() + " " + o.option; }

// The bounds themselves, written as the grammar writes them, are accepted.
TEST(DurationOptions, BoundsAccepted) {
  for (const DurationOption& o : kOptions) {
    std::vector<std::string> values = {extmem::format_duration(o.range.min)};
    if (o.max_runs_briefly) values.push_back(extmem::format_duration(o.range.max));
    for (const std::string& v : values) {
      SCOPED_TRACE(label(o) + "=" + v);
      const auto r = extmem::test::run_extmem(command_line(o, v));
      EXPECT_TRUE(r.code == 0 || (o.stopped_code != 0 && r.code == o.stopped_code)) << r.code << "\n" << r.out;
      EXPECT_EQ(r.out.find("is not accepted"), std::string::npos) << r.out;
    }
  }
}

// Outside the bounds or outside the grammar: exit 2 and the one refusal text, naming the option.
TEST(DurationOptions, RefusedWithTheOneText) {
  for (const DurationOption& o : kOptions) {
    std::vector<std::string> values = {"5x", "-1", "1e3", "2 s", "5min", "500us",
                                       extmem::format_duration(o.range.max + nanoseconds(1))};
    if (o.range.min > nanoseconds(0)) values.push_back(extmem::format_duration(o.range.min - nanoseconds(1)));
    for (const std::string& v : values) {
      SCOPED_TRACE(label(o) + "=" + v);
      const auto parsed = extmem::parse_duration(v, o.range);
      ASSERT_FALSE(parsed) << "the table's value is accepted by the parser itself";
      const auto r = extmem::test::run_extmem(command_line(o, v));
      EXPECT_EQ(r.code, 2) << r.out;
      EXPECT_NE(r.out.find(o.option), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(parsed.error().detail), std::string::npos) << "expected: " << parsed.error().detail << "\n" << r.out;
    }
  }
}

// --help states each option's bounds in the grammar's own words.
TEST(DurationOptions, HelpStatesTheBounds) {
  for (const DurationOption& o : kOptions) {
    SCOPED_TRACE(label(o));
    const auto r = extmem::test::run_extmem("'" + o.before.front() + "' --help");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(o.option), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("from " + extmem::format_duration(o.range.min) + " to " + extmem::format_duration(o.range.max)),
              std::string::npos)
        << r.out;
  }
}

}  // namespace
