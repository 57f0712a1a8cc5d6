// Unit tests of the scan/walk parsers (hex patterns, record templates, page-table
// format JSON), the byte searcher against a naive search, and scan_buffer's
// edges (window borders, alignment, records cut off by the data's ends).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/memtools/scan_query.h"
#include "extmem/memtools/scanner.h"
#include "extmem/memtools/walk_format.h"
#include "memtools/byte_search.h"
#include "memtools/parallel_scan.h"

namespace {

using namespace extmem::memtools;

TEST(HexPattern, AcceptsPairsWithOrWithoutSeparators) {
  const std::vector<std::uint8_t> want = {0x6c, 0x69, 0x61, 0x74};
  for (const char* text : {"6c696174", "6c 69 61 74", "6c:69:61:74", "0x6c696174", "6C696174"}) {
    auto p = parse_hex_pattern(text);
    ASSERT_TRUE(p.ok()) << text << ": " << p.error().message();
    EXPECT_EQ(*p, want) << text;
  }
}

TEST(HexPattern, PointsAtTheBadCharacter) {
  struct Case {
    const char* text;
    std::size_t column;
  };
  for (const Case& c : {Case{"6c6z", 3}, Case{"6c6", 2}, Case{"6c  69", 2}, Case{"6c 0x69", 3}, Case{"", 0},
                        Case{" 6c", 0}, Case{"0x", 2}}) {
    SyntaxError bad;
    EXPECT_FALSE(parse_hex_pattern(c.text, &bad).ok()) << c.text;
    EXPECT_EQ(bad.column, c.column) << c.text << ": " << bad.problem;
  }
  EXPECT_FALSE(parse_hex_pattern(std::string(2 * 4097, 'a')).ok());
  EXPECT_TRUE(parse_hex_pattern(std::string(2 * 4096, 'a')).ok());
}

TEST(ByteOrder, EncodeDecodeBothOrders) {
  EXPECT_EQ(encode_word(0x7461696c, 4, ByteOrder::little), (std::vector<std::uint8_t>{0x6c, 0x69, 0x61, 0x74}));
  EXPECT_EQ(encode_word(0x7461696c, 4, ByteOrder::big), (std::vector<std::uint8_t>{0x74, 0x61, 0x69, 0x6c}));
  const std::uint8_t bytes[] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(decode_word(bytes, 8, ByteOrder::little), 0x0807060504030201u);
  EXPECT_EQ(decode_word(bytes, 2, ByteOrder::big), 0x0102u);
  EXPECT_FALSE(parse_byte_order("middle").ok());
  EXPECT_EQ(*parse_byte_order("be"), ByteOrder::big);
}

TEST(RecordTemplate, ParsesTheSpecExample) {
  auto t = RecordTemplate::parse("va@-0x18:u64 size@-0x10:u64 zero@-0x8:u64=0 marker@0:u32=0x7461696c");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->fields().size(), 4u);
  EXPECT_EQ(t->anchor().name, "marker");
  EXPECT_EQ(t->fields()[0].offset, -0x18);
  EXPECT_EQ(t->min_offset(), -0x18);
  EXPECT_EQ(t->max_end(), 4);
  EXPECT_EQ(t->anchor_bytes(), (std::vector<std::uint8_t>{0x6c, 0x69, 0x61, 0x74}));
}

TEST(RecordTemplate, AnchorOffOriginShiftsOffsetsAndByteOrderSuffixApplies) {
  // Only "hdr" has "=": it becomes the anchor and the other offsets move by -8.
  auto t = RecordTemplate::parse("hdr@8:u16be=0x1234,len@12:u32le>=4", ByteOrder::little);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->anchor().name, "hdr");
  EXPECT_EQ(t->anchor().offset, 0);
  EXPECT_EQ(t->fields()[1].offset, 4);
  EXPECT_EQ(t->anchor_bytes(), (std::vector<std::uint8_t>{0x12, 0x34}));
  std::uint8_t rec[8] = {0x12, 0x34, 0, 0, 5, 0, 0, 0};
  EXPECT_TRUE(t->matches(rec));
  rec[4] = 3;
  EXPECT_FALSE(t->matches(rec));
}

TEST(RecordTemplate, PointsAtTheBadCharacter) {
  struct Case {
    const char* text;
    std::size_t column;
  };
  for (const Case& c : {Case{"9a@0:u32=1", 0}, Case{"a0:u32=1", 2}, Case{"a@0x:u32=1", 4}, Case{"a@0:i32=1", 4},
                        Case{"a@0:u24=1", 4}, Case{"a@0:u32~1", 7}, Case{"a@0:u32=", 8}, Case{"a@0:u8=256", 7},
                        Case{"a@0:u32", 7}, Case{"a@0:u32=1 a@4:u32=2", 10}, Case{"a@0", 3}, Case{"  ", 2}}) {
    SyntaxError bad;
    EXPECT_FALSE(RecordTemplate::parse(c.text, ByteOrder::little, &bad).ok()) << c.text;
    EXPECT_EQ(bad.column, c.column) << c.text << ": " << bad.problem;
    EXPECT_LE(bad.column, std::string_view(c.text).size());
  }
}

TEST(ByteSearcher, AgreesWithANaiveSearch) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    // A small alphabet so partial matches are frequent.
    std::vector<std::uint8_t> hay(1 + rng() % 300);
    for (auto& b : hay) b = static_cast<std::uint8_t>(rng() % 3 == 0 ? 0 : 0x61 + rng() % 3);
    std::vector<std::uint8_t> needle(1 + rng() % 6);
    for (auto& b : needle) b = static_cast<std::uint8_t>(rng() % 3 == 0 ? 0 : 0x61 + rng() % 3);
    detail::ByteSearcher s(needle);
    std::vector<std::size_t> got, want;
    for (const std::uint8_t* at = hay.data();;) {
      const std::uint8_t* f = s.find(at, hay.data() + hay.size());
      if (f == hay.data() + hay.size()) break;
      got.push_back(static_cast<std::size_t>(f - hay.data()));
      at = f + 1;
    }
    for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
      if (std::memcmp(hay.data() + i, needle.data(), needle.size()) == 0) want.push_back(i);
    EXPECT_EQ(got, want) << "round " << round;
  }
}

std::vector<std::uint64_t> hits_of(const std::vector<std::uint8_t>& data, std::uint64_t base, std::size_t lo,
                                   std::size_t hi, const ScanQuery& q) {
  std::vector<std::uint64_t> out;
  std::uint64_t count = 0;
  scan_buffer(data.data(), data.size(), base, lo, hi, q, [&](const ScanHit& h) {
    out.push_back(h.address);
    return true;
  }, count);
  return out;
}

TEST(ScanBuffer, HitsStartingInTheWindowAreReportedEvenIfTheyEndPastIt) {
  std::vector<std::uint8_t> data(64, 0);
  const std::uint8_t pat[] = {0xaa, 0xbb, 0xcc};
  std::memcpy(&data[30], pat, 3);
  ScanQuery q;
  q.pattern.assign(pat, pat + 3);
  EXPECT_EQ(hits_of(data, 1000, 0, 31, q), (std::vector<std::uint64_t>{1030}));  // starts at 30, ends at 32
  EXPECT_TRUE(hits_of(data, 1000, 31, 64, q).empty());                          // the next window does not repeat it
  EXPECT_TRUE(hits_of(data, 1000, 0, 30, q).empty());
}

TEST(ScanBuffer, ValuesOnlyAtTheirNaturalAlignmentOfTheAddress) {
  std::vector<std::uint8_t> data(64, 0);
  const std::uint32_t v = 0x7461696c;
  std::memcpy(&data[8], &v, 4);
  std::memcpy(&data[22], &v, 4);
  ScanQuery q;
  q.kind = ScanQuery::Kind::value;
  q.value = v;
  q.width = 4;
  EXPECT_EQ(hits_of(data, 0, 0, 64, q), (std::vector<std::uint64_t>{8}));
  // Alignment is of the address, not of the buffer offset: base 2 makes offset 22 address 24.
  EXPECT_EQ(hits_of(data, 2, 0, 64, q), (std::vector<std::uint64_t>{24}));
}

TEST(ScanBuffer, RecordsCutOffByTheDataEdgeAreNotReported) {
  auto t = RecordTemplate::parse("before@-8:u64 marker@0:u32=0x7461696c");
  ASSERT_TRUE(t.ok());
  std::vector<std::uint8_t> data(32, 0);
  const std::uint32_t v = 0x7461696c;
  std::memcpy(&data[4], &v, 4);   // its "before" field would start at -4
  std::memcpy(&data[16], &v, 4);  // complete
  ScanQuery q;
  q.kind = ScanQuery::Kind::record;
  q.record = std::move(*t);
  EXPECT_EQ(hits_of(data, 0, 0, 32, q), (std::vector<std::uint64_t>{16}));
}

TEST(ScanBuffer, MaxHitsStops) {
  std::vector<std::uint8_t> data(64, 0x11);
  ScanQuery q;
  q.pattern = {0x11};
  q.max_hits = 3;
  EXPECT_EQ(hits_of(data, 0, 0, 64, q).size(), 3u);
}

TEST(WalkFormat, BuiltInsLoadAndMatchTheShippedJson) {
  for (const std::string& name : WalkFormat::builtin_names()) {
    SCOPED_TRACE(name);
    auto f = WalkFormat::builtin(name);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->name, name);
    std::ifstream in(std::string(EXTMEM_SOURCE_DIR) + "/docs/walk-formats/" + name + ".json");
    std::stringstream s;
    s << in.rdbuf();
    EXPECT_EQ(nlohmann::json::parse(s.str()), nlohmann::json::parse(WalkFormat::builtin_json(name)));
  }
  auto g = WalkFormat::builtin("gmmu");
  // docs/memtools.md, "Formats": root covers 49 - log2(entries) = 47 for 4 entries; then 38, 29, 21 (16-byte dual), 12.
  EXPECT_EQ(g->levels[g->root].shift, 47u);
  EXPECT_EQ(g->levels[g->root].index_bits, 2u);
  EXPECT_EQ(g->levels[3].entry_bytes, 16u);
  EXPECT_EQ(g->levels[3].parts.size(), 2u);
}

TEST(WalkFormat, ErrorsNameTheJsonPath) {
  const std::string base = R"({"name": "t", "va_bits": 21, "root": "A", "levels": [)";
  struct Case {
    std::string levels, path;
  };
  const std::string ok_part = R"("valid": {"mask": 1}, "address": {"low": 12, "high": 51, "shift": 12})";
  for (const Case& c : {
           Case{R"({"name": "A", "shift": 12, "index_bits": 9, "entry_bytes": 8, )" + ok_part + "}]}", ""},
           Case{R"({"name": "A", "shift": 12, "index_bits": 9, "entry_bytes": 6, )" + ok_part + "}]}",
                "/levels/0/entry_bytes"},
           Case{R"({"name": "A", "shift": 12, "index_bits": 9, "entry_bytes": 8, "colour": 1, )" + ok_part + "}]}",
                "/levels/0/colour"},
           Case{R"({"name": "A", "shift": 12, "index_bits": 9, "entry_bytes": 8, "next": "A", )" + ok_part + "}]}",
                "/levels/0/next"},
           Case{R"({"name": "A", "shift": 12, "index_bits": 9, "entry_bytes": 8, "valid": {"mask": 0}, "address": {"low": 12, "high": 51, "shift": 12}}]})",
                "/levels/0/valid/mask"},
           Case{R"({"name": "A", "shift": 12, "index_bits": 9, "entry_bytes": 8, "valid": {"mask": 1}, "address": {"low": 52, "high": 51, "shift": 12}}]})",
                "/levels/0/address/high"},
           Case{R"({"name": "A", "shift": 12, "index_bits": 5, "entry_bytes": 8, )" + ok_part + "}]}", "/root"},
       }) {
    auto f = WalkFormat::from_json(base + c.levels);
    if (c.path.empty()) {
      EXPECT_TRUE(f.ok()) << f.error().message();
      continue;
    }
    ASSERT_FALSE(f.ok()) << c.path;
    EXPECT_EQ(f.error().detail.rfind(c.path + ":", 0), 0u) << f.error().detail;
  }
  // parse() throws out_of_range, not parse_error, for a number beyond a double (found by the fuzzer).
  auto huge = WalkFormat::from_json("77e77777777777#\n");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().detail.find("number overflow"), std::string::npos) << huge.error().detail;
  SyntaxError bad;
  EXPECT_FALSE(WalkFormat::from_json("{\"name\": ,}", &bad).ok());
  EXPECT_EQ(bad.column, 9u) << bad.problem;
}

}  // namespace

namespace {

using namespace extmem::memtools;

// The threaded file search delivers exactly the hits of a one-thread search,
// in order, also when pieces have more hits than a thread keeps (cap) and
// when --max stops it.
TEST(ParallelScan, SameHitsInOrderAsOneThread) {
  std::vector<std::uint8_t> data(64 * 1024 + 13);
  std::mt19937 rng(11);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng() % 4);  // "01" occurs every ~16 bytes
  ScanQuery q;
  q.pattern = {0x01, 0x02};
  std::vector<std::uint64_t> want;
  std::uint64_t n = 0;
  scan_buffer(data.data(), data.size(), 0, 0, data.size(), q, [&](const ScanHit& h) {
    want.push_back(h.address);
    return true;
  }, n);
  ASSERT_GT(want.size(), 1000u);
  for (unsigned workers : {0u, 1u, 3u}) {
    for (std::size_t cap : {std::size_t{5}, std::size_t{100000}}) {
      std::vector<std::uint64_t> got;
      std::uint64_t hits = 0, bytes = 0;
      const bool complete = detail::scan_mapped(data.data(), data.size(), q, [&](const ScanHit& h) {
        got.push_back(h.address);
        return true;
      }, workers, 4096, cap, hits, bytes);
      EXPECT_TRUE(complete);
      EXPECT_EQ(got, want) << workers << " workers, cap " << cap;
      EXPECT_EQ(hits, want.size());
      EXPECT_EQ(bytes, data.size());
    }
  }
  q.max_hits = 700;
  std::vector<std::uint64_t> got;
  std::uint64_t hits = 0, bytes = 0;
  EXPECT_FALSE(detail::scan_mapped(data.data(), data.size(), q, [&](const ScanHit& h) {
    got.push_back(h.address);
    return true;
  }, 3, 4096, 5, hits, bytes));
  EXPECT_EQ(got, std::vector<std::uint64_t>(want.begin(), want.begin() + 700));
}

}  // namespace
