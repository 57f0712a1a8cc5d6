// Unit tests of the memtools parsers and decoders: numbers, SPEC, ram-map,
// --when conditions, regex limits, the caret in syntax errors, pagemap entry
// decoding and folding, exit-code mapping and the audit line. No processes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "extmem/memtools/commands.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/memtools/pagemap.h"
#include "extmem/memtools/poll.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/ram_map.h"
#include "extmem/memtools/syntax.h"
#include "extmem/memtools/word_access.h"

namespace {

using namespace extmem::memtools;
using extmem::os::MapEntry;

MapEntry mapping(std::uint64_t start, std::uint64_t size, const char* perms, std::uint64_t offset, const char* path) {
  MapEntry m;
  m.start = start;
  m.end = start + size;
  m.perms = perms;
  m.offset = offset;
  m.path = path;
  return m;
}

// Parses `text` with `parse` and returns the syntax error's column (or -1 when it parsed).
template <typename Parse>
long column_of(Parse parse, std::string_view text) {
  SyntaxError e;
  auto r = parse(text, &e);
  if (r) return -1;
  EXPECT_EQ(e.input, text);
  EXPECT_FALSE(e.accepted.empty());
  return static_cast<long>(e.column);
}

long spec_column(std::string_view text) {
  return column_of([](std::string_view t, SyntaxError* e) { return MapSpec::parse(t, e); }, text);
}
long ram_column(std::string_view text) {
  return column_of([](std::string_view t, SyntaxError* e) { return RamMap::parse(t, e); }, text);
}

// Numbers: hex and decimal, units, and overflow are told apart per style.
TEST(MemtoolsNumbers, ParsesEachStyle) {
  EXPECT_EQ(*parse_number("7f1c2a400080", NumberStyle::address), 0x7f1c2a400080u);
  EXPECT_EQ(*parse_number("0x7F1C", NumberStyle::address), 0x7f1cu);
  EXPECT_EQ(*parse_number("4096", NumberStyle::quantity), 4096u);
  EXPECT_EQ(*parse_number("0x4000", NumberStyle::quantity), 0x4000u);
  EXPECT_EQ(*parse_number("16K", NumberStyle::quantity), 16384u);
  EXPECT_EQ(*parse_number("16KiB", NumberStyle::quantity), 16384u);
  EXPECT_EQ(*parse_number("2M", NumberStyle::quantity), 2u << 20);
  EXPECT_EQ(*parse_number("1g", NumberStyle::quantity), 1u << 30);
  EXPECT_EQ(*parse_number("0x2K", NumberStyle::quantity), 2048u);
  EXPECT_EQ(*parse_number("18446744073709551615", NumberStyle::value), ~std::uint64_t{0});
  EXPECT_FALSE(parse_number("16K", NumberStyle::value));
  EXPECT_FALSE(parse_number("", NumberStyle::value));
  EXPECT_FALSE(parse_number("0x", NumberStyle::value));
  EXPECT_FALSE(parse_number("16KB", NumberStyle::quantity));
}

// A bad character, a missing digit and an overflow each point at their own column.
TEST(MemtoolsNumbers, ErrorsPointAtTheCharacter) {
  SyntaxError e;
  EXPECT_FALSE(parse_number("0x12g4", NumberStyle::address, "address", &e));
  EXPECT_EQ(e.column, 4u);
  EXPECT_EQ(e.subject, "address");
  EXPECT_FALSE(parse_number("0x", NumberStyle::value, "value", &e));
  EXPECT_EQ(e.column, 2u);
  EXPECT_FALSE(parse_number("18446744073709551616", NumberStyle::value, "value", &e));
  EXPECT_EQ(e.column, 19u);
  EXPECT_FALSE(parse_number("16777216T", NumberStyle::quantity, "size", &e));
  EXPECT_EQ(e.column, 8u);
  EXPECT_FALSE(parse_number("17179869184G", NumberStyle::quantity, "size", &e));  // 2^34 GiB = 2^64
  EXPECT_EQ(e.column, 11u);
}

// Word values must fit their width; widths are 1, 2, 4, 8 only.
TEST(MemtoolsNumbers, WordValuesFitTheirWidth) {
  EXPECT_EQ(*parse_word_value("255", 1), 255u);
  EXPECT_FALSE(parse_word_value("256", 1));
  EXPECT_EQ(*parse_word_value("0xffffffff", 4), 0xffffffffu);
  EXPECT_FALSE(parse_word_value("0x100000000", 4));
  EXPECT_EQ(*parse_width("8"), 8u);
  EXPECT_FALSE(parse_width("3"));
  EXPECT_FALSE(parse_width("16"));
  EXPECT_FALSE(parse_width("4x"));
}

// Pids are positive decimal numbers that fit pid_t.
TEST(MemtoolsNumbers, ParsesPids) {
  EXPECT_EQ(*parse_pid("42"), 42);
  EXPECT_FALSE(parse_pid("0"));
  EXPECT_FALSE(parse_pid("0x2a"));
  EXPECT_FALSE(parse_pid("-1"));
  EXPECT_FALSE(parse_pid("4294967296"));
}

// format_size prints the largest exact unit, and what it prints parses back.
TEST(MemtoolsNumbers, FormatSizeRoundTrips) {
  for (std::uint64_t v : {0ull, 1ull, 4096ull, 16384ull, 1ull << 20, 3ull << 30, 12345ull}) {
    auto back = parse_number(format_size(v), NumberStyle::quantity);
    ASSERT_TRUE(back) << format_size(v);
    EXPECT_EQ(*back, v);
  }
  EXPECT_EQ(format_size(16384), "16K");
  EXPECT_EQ(format_size(12345), "12345");
}

// Every SPEC term kind matches what it should and nothing else.
TEST(MemtoolsSpec, TermsMatch) {
  const MapEntry waiter = mapping(0x7f0000000000, 0x4000, "rw-s", 0, "/memfd:extmem-waiter (deleted)");
  const MapEntry heap = mapping(0x555555000000, 0x21000, "rw-p", 0, "[heap]");
  const MapEntry lib = mapping(0x7f0000100000, 0x1000, "r-xp", 0x2000, "/usr/lib/libc.so.6");
  const MapEntry anon = mapping(0x7f0000200000, 0x100000, "rw-p", 0, "");
  auto check = [&](const char* text, bool w, bool h, bool l, bool a) {
    auto spec = MapSpec::parse(text);
    ASSERT_TRUE(spec) << text << ": " << spec.error().message();
    EXPECT_EQ(spec->matches(waiter), w) << text;
    EXPECT_EQ(spec->matches(heap), h) << text;
    EXPECT_EQ(spec->matches(lib), l) << text;
    EXPECT_EQ(spec->matches(anon), a) << text;
  };
  check("perms=rw-s", true, false, false, false);
  check("perms=rw-?", true, true, false, true);
  check("perms=???p", false, true, true, true);
  check("size=0x4000", true, false, false, false);
  check("size=16K", true, false, false, false);
  check("size>=1M", false, false, false, true);
  check("size<16K", false, false, true, false);
  check("size>4K,size<=132K", true, true, false, false);
  check("size!=4K", true, true, false, true);
  check("offset=0x2000", false, false, true, false);
  check("offset==0", true, true, false, true);
  check("path=[heap]", false, true, false, false);
  check("path=", false, false, false, true);
  check("path^=/memfd:extmem-waiter", true, false, false, false);
  check("path~=libc\\.so", false, false, true, false);
  check("path~=^/(usr|memfd)", true, false, true, false);
  check("path~=deleted\\)$", true, false, false, false);
  check("perms=rw-s,size=16K,path^=/memfd:", true, false, false, false);
}

// "\," is a comma inside a path value, so regex intervals and odd names work.
TEST(MemtoolsSpec, EscapedCommaInPath) {
  auto spec = MapSpec::parse("path=/tmp/a\\,b,perms=r--p");
  ASSERT_TRUE(spec) << spec.error().message();
  ASSERT_EQ(spec->terms().size(), 2u);
  EXPECT_EQ(spec->terms()[0].text, "/tmp/a,b");
  auto re = MapSpec::parse("path~=^/x{1\\,2}$");
  ASSERT_TRUE(re) << re.error().message();
  EXPECT_TRUE(re->matches(mapping(0, 4096, "r--p", 0, "/xx")));
  EXPECT_FALSE(re->matches(mapping(0, 4096, "r--p", 0, "/xxx")));
}

// Each malformed SPEC names the column of the offending character.
TEST(MemtoolsSpec, MalformedPointsAtColumn) {
  EXPECT_EQ(spec_column(""), 0);
  EXPECT_EQ(spec_column("perms=rw-s,sise=0x4000"), 11);     // unknown key
  EXPECT_EQ(spec_column("perms=rw-x"), 9);                  // 4th perms char
  EXPECT_EQ(spec_column("perms=rwq-"), 8);                  // 3rd perms char
  EXPECT_EQ(spec_column("perms=rw-"), 9);                   // too short
  EXPECT_EQ(spec_column("perms=rw-sp"), 10);                // too long
  EXPECT_EQ(spec_column("size=0x40z0"), 9);                 // bad digit
  EXPECT_EQ(spec_column("size=16KB"), 8);                   // bad unit
  EXPECT_EQ(spec_column("size~=1"), 4);                     // operator size does not take
  EXPECT_EQ(spec_column("perms>=rw-s"), 5);
  EXPECT_EQ(spec_column("path<x"), 4);
  EXPECT_EQ(spec_column("size"), 4);                        // no operator
  EXPECT_EQ(spec_column("size=16K,"), 9);                   // trailing comma
  EXPECT_EQ(spec_column("size=16K,,perms=rw-s"), 9);        // empty term
  EXPECT_EQ(spec_column("Size=1"), 0);
  EXPECT_EQ(spec_column("path~=a\\1"), 7);                  // back-reference
  EXPECT_EQ(spec_column("size=4K,path~=(ab"), 14);         // regcomp error: start of the regex
  EXPECT_EQ(spec_column("size="), 5);
}

// The rendered error shows the input with the caret under the offending character.
TEST(MemtoolsSyntax, RenderPutsCaretUnderColumn) {
  SyntaxError e;
  ASSERT_FALSE(MapSpec::parse("perms=rw-s,sise=0x4000", &e));
  const std::string text = e.render("--match");
  EXPECT_NE(text.find("bad --match SPEC: unknown key \"sise\""), std::string::npos) << text;
  EXPECT_NE(text.find("\n  perms=rw-s,sise=0x4000\n  " + std::string(11, ' ') + "^\n"), std::string::npos) << text;
  EXPECT_NE(text.find("accepted: "), std::string::npos);
  // Multi-byte UTF-8 before the column counts as one column each.
  SyntaxError u;
  ASSERT_FALSE(MapSpec::parse("path=/tmp/\xc3\xa9,sise=1", &u));
  EXPECT_NE(u.render().find("\n  path=/tmp/\xc3\xa9,sise=1\n  " + std::string(12, ' ') + "^\n"), std::string::npos)
      << u.render();
  // Long input is cut to a window, and the caret still lands on the character.
  SyntaxError l;
  const std::string long_spec = std::string("path=") + std::string(300, 'a') + ",bogus=1";
  ASSERT_FALSE(MapSpec::parse(long_spec, &l));
  const std::string r = l.render();
  const std::size_t line = r.find("\n  ...") + 1;
  const std::size_t caret_line = r.find('\n', line) + 1;
  const std::size_t caret = r.find('^', caret_line) - caret_line;
  EXPECT_EQ(r.substr(line + caret, 5), "bogus") << r;
}

// The ram-map parser accepts lists, sorts them, and translates both ways.
TEST(MemtoolsRamMap, ParsesAndTranslates) {
  auto map = RamMap::parse("0x100000000:0x80000000:1G,0:0:2G");
  ASSERT_TRUE(map) << map.error().message();
  ASSERT_EQ(map->ranges().size(), 2u);
  EXPECT_EQ(map->ranges()[0].gpa, 0u);
  EXPECT_EQ(*map->to_file_offset(0x1234), 0x1234u);
  EXPECT_EQ(*map->to_file_offset(0x100000010), 0x80000010u);
  EXPECT_FALSE(map->to_file_offset(0x80000000));  // the hole between 2G and 4G
  EXPECT_EQ(*map->to_gpa(0x80000010), 0x100000010u);
  EXPECT_FALSE(map->to_gpa(0xC0000000));
}

// Overlaps in either space, zero sizes, wrap-around and junk are refused at their column.
TEST(MemtoolsRamMap, MalformedPointsAtColumn) {
  EXPECT_EQ(ram_column(""), 0);
  EXPECT_EQ(ram_column("0:0:4K,0x800:0x1000:4K"), 7);    // GPA overlap: second GPA
  EXPECT_EQ(ram_column("0:0:4K,0x1000:0x800:4K"), 14);   // file overlap: second FILEOFF
  EXPECT_EQ(ram_column("0:0:0"), 4);                     // size 0
  EXPECT_EQ(ram_column("0xffffffffffffffff:0:2"), 21);   // wraps
  EXPECT_EQ(ram_column("0:0"), 3);                       // missing SIZE
  EXPECT_EQ(ram_column("0:0:4K:5"), 6);                  // extra field
  EXPECT_EQ(ram_column("0:0:4K,"), 7);                   // trailing comma
  EXPECT_EQ(ram_column("0:0x1z:4K"), 5);                 // bad digit
  EXPECT_EQ(ram_column("::"), 0);
  EXPECT_EQ(ram_column("0:0:4K,0x1000:0x1000:4K"), -1);  // adjacent is fine
  EXPECT_EQ(ram_column("4G:0:4K"), 1);                    // a GPA is an address: no size suffix
}

// The GPA follows the address grammar (hexadecimal unless 0n), FILEOFF and SIZE keep K/M/G.
TEST(MemtoolsRamMap, GpaIsAnAddressFileOffsetAndSizeAreQuantities) {
  auto map = RamMap::parse("100000000:4M:4M,0n4096:0:4K");
  ASSERT_TRUE(map) << map.error().message();
  EXPECT_EQ(map->ranges()[0].gpa, 4096u);
  EXPECT_EQ(map->ranges()[1].gpa, 0x100000000u);
  EXPECT_EQ(map->ranges()[1].file_offset, 4u << 20);
}

// Conditions: every operator, values bound by the width, the caret on errors.
TEST(MemtoolsCondition, ParsesOperators) {
  struct Case { const char* text; CompareOp op; std::uint64_t value; };
  for (const Case& c : {Case{"==0", CompareOp::eq, 0}, Case{"!=0x10", CompareOp::ne, 16}, Case{"<5", CompareOp::lt, 5},
                        Case{"<=5", CompareOp::le, 5}, Case{">5", CompareOp::gt, 5}, Case{">=5", CompareOp::ge, 5}}) {
    auto cond = parse_condition(c.text, 4);
    ASSERT_TRUE(cond) << c.text;
    EXPECT_EQ(cond->op, c.op) << c.text;
    EXPECT_EQ(cond->value, c.value) << c.text;
  }
  EXPECT_TRUE(parse_condition("==0", 4)->holds(0));
  EXPECT_FALSE(parse_condition("==0", 4)->holds(1));
  EXPECT_TRUE(parse_condition(">=5", 4)->holds(7));
  SyntaxError e;
  EXPECT_FALSE(parse_condition("=<0", 4, &e));
  EXPECT_EQ(e.column, 0u);
  EXPECT_FALSE(parse_condition("==x", 4, &e));
  EXPECT_EQ(e.column, 2u);
  EXPECT_FALSE(parse_condition("0", 4, &e));
  EXPECT_EQ(e.column, 0u);
  EXPECT_FALSE(parse_condition("==256", 1, &e));
  EXPECT_EQ(e.column, 2u);
  EXPECT_FALSE(parse_condition("==", 4, &e));
  EXPECT_EQ(e.column, 2u);
}

// Regexes: limits that keep regcomp bounded are enforced before it runs.
TEST(MemtoolsRegex, LimitsAndMatching) {
  auto re = Regex::compile("^memtools_(waiter|other) [0-9]+$");
  ASSERT_TRUE(re) << re.error().message();
  EXPECT_TRUE(re->search("memtools_waiter 42"));
  EXPECT_FALSE(re->search("xmemtools_waiter 42"));
  EXPECT_FALSE(Regex::compile(""));
  EXPECT_FALSE(Regex::compile(std::string(Regex::kMaxPattern + 1, 'a')));
  EXPECT_FALSE(Regex::compile("(a)\\1"));
  // Nested repetitions multiply what regcomp builds and how long it takes: refused past the bounds.
  EXPECT_TRUE(Regex::compile("a{255}"));
  EXPECT_TRUE(Regex::compile("(a{60}){60}"));
  EXPECT_FALSE(Regex::compile("((a{100}){100})"));
  EXPECT_FALSE(Regex::compile("x|(a{70}){70}"));
  EXPECT_TRUE(Regex::compile("(ab+)*c"));
  EXPECT_TRUE(Regex::compile("a+?"));
  EXPECT_FALSE(Regex::compile("((a+)*)?"));
  EXPECT_FALSE(Regex::compile("a?+?+?+?+?+?+?+?+"));                          // seconds in regcomp
  EXPECT_FALSE(Regex::compile("ja]p" + std::string(60, '+') + "tha~"));       // found by the fuzzer
  EXPECT_FALSE(Regex::compile("j]ap+\xab++++p+\xab++" + std::string(65, '?') + "++++Msiz"));  // and this
  EXPECT_TRUE(Regex::compile("[{]{3}"));  // a brace in a bracket is no interval
  EXPECT_FALSE(Regex::compile("(unclosed"));
}

// Process filters combine criteria with AND; comm compares the kernel's 15 bytes.
TEST(MemtoolsProcesses, FilterCombinesCriteria) {
  ProcessInfo p{42, "memtools_waiter", "/x/memtools_waiter extmem-waiter-1 20"};
  ProcessFilter f;
  EXPECT_TRUE(matches(f, p));
  f.comm = "memtools_waiter_with_a_long_name";
  EXPECT_TRUE(matches(f, p));
  f.cmdline = *Regex::compile("waiter-1 ");
  EXPECT_TRUE(matches(f, p));
  f.pids = {41};
  EXPECT_FALSE(matches(f, p));
  f.pids = {41, 42};
  EXPECT_TRUE(matches(f, p));
  f.cmdline = *Regex::compile("waiter-2");
  EXPECT_FALSE(matches(f, p));
}

// Pagemap entries: each flag bit, the PFN, and "hidden" never shown as frame 0.
TEST(MemtoolsPagemap, DecodesEntries) {
  const std::uint64_t present = 1ull << 63, swapped = 1ull << 62, file = 1ull << 61, excl = 1ull << 56,
                      dirty = 1ull << 55;
  PageEntry e = decode_pagemap_entry(present | file | excl | dirty | 0x29c303, true);
  EXPECT_TRUE(e.present && e.file_or_shared && e.exclusive && e.soft_dirty);
  EXPECT_FALSE(e.swapped || e.pfn_hidden);
  EXPECT_EQ(*e.pfn, 0x29c303u);
  EXPECT_EQ(describe_flags(e), "present exclusive file/shared soft-dirty");

  PageEntry hidden = decode_pagemap_entry(present | excl, false);
  EXPECT_TRUE(hidden.pfn_hidden);
  EXPECT_FALSE(hidden.pfn);
  // Without the capability even a non-zero field is not interpreted.
  EXPECT_FALSE(decode_pagemap_entry(present | 0x1234, false).pfn);
  // With it, a present page with PFN 0 is still "hidden", not frame 0.
  PageEntry zero = decode_pagemap_entry(present, true);
  EXPECT_TRUE(zero.pfn_hidden);
  EXPECT_FALSE(zero.pfn);

  PageEntry swap = decode_pagemap_entry(swapped | (0x1234ull << 5) | 3, true);
  EXPECT_TRUE(swap.swapped);
  EXPECT_FALSE(swap.present);
  EXPECT_EQ(*swap.swap_type, 3u);
  EXPECT_EQ(*swap.swap_offset, 0x1234u);
  EXPECT_FALSE(swap.pfn);

  PageEntry none = decode_pagemap_entry(0, true);
  EXPECT_FALSE(none.present || none.swapped || none.pfn_hidden);
  EXPECT_EQ(describe_flags(none), "not-present");
}

// Folding joins pages with equal flags and consecutive frames, and nothing else.
TEST(MemtoolsPagemap, FoldsRuns) {
  const std::uint64_t present = 1ull << 63, excl = 1ull << 56;
  const std::uint64_t ps = page_size();
  std::vector<PageEntry> pages = {
      decode_pagemap_entry(present | excl | 100, true), decode_pagemap_entry(present | excl | 101, true),
      decode_pagemap_entry(present | excl | 200, true),  // frame jump
      decode_pagemap_entry(present | 201, true),         // flags change
      decode_pagemap_entry(0, true), decode_pagemap_entry(0, true)};
  auto runs = fold_pages(0x10000, pages);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].pages, 2u);
  EXPECT_EQ(*runs[0].first.pfn, 100u);
  EXPECT_EQ(runs[1].start, 0x10000 + 2 * ps);
  EXPECT_EQ(runs[2].pages, 1u);
  EXPECT_EQ(runs[3].pages, 2u);
  EXPECT_FALSE(runs[3].first.present);
  // Hidden PFNs fold on flags alone.
  std::vector<PageEntry> hidden(5, decode_pagemap_entry(present | excl, false));
  EXPECT_EQ(fold_pages(0, hidden).size(), 1u);
}

// Errors map to the documented exit codes.
TEST(MemtoolsExitCodes, MapErrors) {
  using extmem::Error;
  using extmem::ErrorKind;
  using extmem::memtools::WordCode;
  // Our own codes go by their number (word_error), not their name.
  auto ours = [](const char* step, ErrorKind kind, WordCode code) {
    return extmem::memtools::word_error(step, kind, code, "");
  };
  EXPECT_EQ(exit_code_for(ours("poke", ErrorKind::invalid_argument, WordCode::not_mapped)), kExitRefused);
  EXPECT_EQ(exit_code_for(ours("poke", ErrorKind::invalid_argument, WordCode::spec_mismatch)), kExitRefused);
  EXPECT_EQ(exit_code_for(ours("poke", ErrorKind::invalid_argument, WordCode::crosses_mapping)), kExitRefused);
  EXPECT_EQ(exit_code_for(ours("poke", ErrorKind::invalid_argument, WordCode::not_writable)), kExitRefused);
  EXPECT_EQ(exit_code_for(ours("poke", ErrorKind::mismatch, WordCode::expect_mismatch)), kExitExpectMismatch);
  EXPECT_EQ(exit_code_for(ours("peek", ErrorKind::invalid_argument, WordCode::past_end)), kExitPastEnd);
  EXPECT_EQ(exit_code_for(extmem::os_error("open /proc/1/mem", ENOENT)), kExitNoProcess);
  EXPECT_EQ(exit_code_for(extmem::os_error("pread", ESRCH)), kExitNoProcess);
  EXPECT_EQ(exit_code_for(extmem::os_error("open /proc/1/mem", EACCES)), kExitPermission);
  EXPECT_EQ(exit_code_for(extmem::os_error("open /proc/1/mem", EPERM)), kExitPermission);
  EXPECT_EQ(exit_code_for(extmem::os_error("pread", EIO)), kExitFailed);
  EXPECT_EQ(exit_code_for(Error{"parse SPEC", ErrorKind::invalid_argument, "", "x"}), kExitUsage);
}

// find_target_mapping refuses each case with its own code.
TEST(MemtoolsWordAccess, TargetMappingChecks) {
  const std::vector<MapEntry> maps = {mapping(0x10000, 0x4000, "rw-s", 0, "/memfd:a (deleted)"),
                                      mapping(0x20000, 0x1000, "r--p", 0, "/lib/x.so")};
  auto spec = *MapSpec::parse("size=16K");
  EXPECT_TRUE(find_target_mapping(maps, 0x10080, 4, &spec, true, "t"));
  EXPECT_EQ(find_target_mapping(maps, 0x1000, 4, nullptr, true, "t").error().code, kCodeNotMapped);
  EXPECT_EQ(find_target_mapping(maps, 0x13ffe, 4, nullptr, true, "t").error().code, kCodeCrossesMapping);
  EXPECT_TRUE(find_target_mapping(maps, 0x13ffc, 4, nullptr, true, "t"));
  EXPECT_EQ(find_target_mapping(maps, 0x20000, 4, &spec, false, "t").error().code, kCodeSpecMismatch);
  EXPECT_EQ(find_target_mapping(maps, 0x20000, 4, nullptr, true, "t").error().code, kCodeNotWritable);
  EXPECT_TRUE(find_target_mapping(maps, 0x20000, 8, nullptr, false, "t"));
}

// An audit line holds time, pid, address, mapping, old and new on one line.
TEST(MemtoolsWordAccess, AuditLineFields) {
  WriteRecord r;
  r.pid = 42;
  r.comm = "waiter \"x\"";
  r.address = 0x7f0000000080;
  r.width = 4;
  r.old_value = 0;
  r.written = 1;
  r.read_back = 1;
  r.mapping = mapping(0x7f0000000000, 0x4000, "rw-s", 0, "/memfd:w\n (deleted)");
  const auto when = std::chrono::system_clock::time_point(std::chrono::microseconds(1764410400123456));
  EXPECT_EQ(format_audit_line(r, when),
            "2025-11-29T10:00:00.123456Z write pid=42 comm=\"waiter \\\"x\\\"\" addr=0x7f0000000080 width=4 old=0x0 "
            "new=0x1 readback=0x1 mapping=7f0000000000-7f0000004000 rw-s 00000000 /memfd:w\\x0a (deleted)");
  WriteRecord f;
  f.file = "/tmp/ram.img";
  f.address = 0x1000;
  f.width = 8;
  f.old_value = 5;
  f.written = 6;
  f.read_back = 6;
  EXPECT_NE(format_audit_line(f, when).find("write file=\"/tmp/ram.img\" offset=0x1000 width=8 old=0x5 new=0x6 readback=0x6"),
            std::string::npos);
  // A process that ended right after the write has no read-back, and says so.
  r.read_back.reset();
  EXPECT_NE(format_audit_line(r, when).find(" new=0x1 readback=ended mapping="), std::string::npos);
  EXPECT_FALSE(r.read_back_differs());
  r.read_back = 2;
  EXPECT_TRUE(r.read_back_differs());
}

}  // namespace
