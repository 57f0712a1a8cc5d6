// The one duration grammar (extmem/core/duration.h): what it reads, what it
// refuses, the single refusal text, the bounds, and the round trip of its
// formatter.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "extmem/core/duration.h"

namespace {

using namespace std::chrono;
using extmem::DurationRange;
using extmem::format_duration;
using extmem::parse_duration;

struct Accepted {
  const char* text;
  nanoseconds value;
};

// Every unit, bare seconds, fractions: exact values, no floating-point rounding.
TEST(Duration, AcceptedForms) {
  const Accepted cases[] = {
      {"5", seconds(5)},           {"5s", seconds(5)},           {"250ms", milliseconds(250)},
      {"2m", minutes(2)},          {"1h", hours(1)},             {"2.5s", milliseconds(2500)},
      {"0.1", milliseconds(100)},  {".5s", milliseconds(500)},   {"5.", seconds(5)},
      {"1.5m", seconds(90)},       {"0.001", milliseconds(1)},   {"1.000000001s", nanoseconds(1'000'000'001)},
      {"0.5ms", microseconds(500)}, {"0001s", seconds(1)},       {"8784h", hours(8784)},
  };
  for (const Accepted& c : cases) {
    auto d = parse_duration(c.text, {nanoseconds(1), hours(8784)});
    ASSERT_TRUE(d) << c.text << ": " << d.error().detail;
    EXPECT_EQ(*d, c.value) << c.text;
  }
}

// Junk, signs, exponents, spaces, other units, too many digits: refused.
TEST(Duration, RefusedForms) {
  for (const char* text : {"", "s", "ms", ".", "-1s", "+1s", "1e3", "1.2.3s", "10 ms", " 5", "5 ", "5d", "5sec",
                           "1min", "500us", "10ns", "5S", "5MS", "0x10", "1,5s", "5s5", "1234567890123",
                           "1.0000000001", "\xff"}) {
    auto d = parse_duration(text, {nanoseconds(1), hours(8784)});
    EXPECT_FALSE(d) << text;
  }
}

// Both bounds are inclusive; one nanosecond outside either is refused.
TEST(Duration, BoundsInclusive) {
  const DurationRange r{milliseconds(250), minutes(2)};
  EXPECT_TRUE(parse_duration("250ms", r));
  EXPECT_TRUE(parse_duration("2m", r));
  EXPECT_TRUE(parse_duration("120", r));
  EXPECT_FALSE(parse_duration("0.249999999", r));
  EXPECT_FALSE(parse_duration("120.000000001", r));
  EXPECT_FALSE(parse_duration("0", r));
}

// The default range is 1ms to 366 days: zero is refused, so is a year and a day.
TEST(Duration, DefaultRange) {
  EXPECT_TRUE(parse_duration("1ms"));
  EXPECT_FALSE(parse_duration("0"));
  EXPECT_FALSE(parse_duration("0.5ms"));
  EXPECT_TRUE(parse_duration("8784h"));
  EXPECT_FALSE(parse_duration("8785h"));
  // Large enough to overflow 64-bit nanoseconds if multiplied carelessly.
  EXPECT_FALSE(parse_duration("999999999999h"));
}

// Every refusal has the same kind, step and text: the value, then what is accepted with the bounds.
TEST(Duration, OneRefusalText) {
  const DurationRange r{milliseconds(1), hours(1)};
  const std::string accepted =
      "is not accepted: a duration from 1ms to 1h, a number with an optional unit ms, s, m or h (no unit: seconds), "
      "e.g. 5, 5s, 250ms, 2m";
  for (const char* text : {"5x", "-1", "2h", "0", ""}) {
    auto d = parse_duration(text, r);
    ASSERT_FALSE(d) << text;
    EXPECT_EQ(d.error().kind, extmem::ErrorKind::invalid_argument);
    EXPECT_EQ(d.error().step, "duration");
    EXPECT_EQ(d.error().code, "");
    EXPECT_EQ(d.error().detail, "\"" + std::string(text) + "\" " + accepted) << text;
  }
}

// A long text is quoted only in part, so a refusal stays one readable line.
TEST(Duration, LongTextQuotedInPart) {
  const std::string text(5000, '7');
  auto d = parse_duration(text);
  ASSERT_FALSE(d);
  EXPECT_LT(d.error().detail.size(), 300u);
}

// The formatter picks the largest exact unit, and what it prints parses back to the same value.
TEST(Duration, FormatRoundTrips) {
  const Accepted cases[] = {
      {"1h", hours(1)},         {"2m", minutes(2)},          {"90s", seconds(90)},
      {"250ms", milliseconds(250)}, {"1500ms", milliseconds(1500)}, {"0.5ms", microseconds(500)},
      {"0.000001ms", nanoseconds(1)}, {"8784h", hours(8784)},   {"61m", minutes(61)},
  };
  for (const Accepted& c : cases) {
    EXPECT_EQ(format_duration(c.value), c.text);
    auto back = parse_duration(format_duration(c.value), {nanoseconds(1), hours(8784)});
    ASSERT_TRUE(back) << c.text;
    EXPECT_EQ(*back, c.value) << c.text;
  }
}

}  // namespace
