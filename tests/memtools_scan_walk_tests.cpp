// Integration tests of `extmem scan` and `extmem walk` on a synthetic RAM image
// written by tests/programs/memtools_ram_image (which prints what it planted),
// and of `scan --pid` on this test process. Every planted item must be found
// and nothing else; every walk must land on the planted physical address or
// name the level of the invalid entry.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = EXTMEM_BINARY;
const std::string kGenerator = std::string(EXTMEM_TEST_PROGRAMS_DIR) + "/memtools_ram_image";

struct Output {
  int code = -1;  // exit status; 128 + signal when killed by one
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs argv through the shell with stdout and stderr sent to files.
Output run(const std::vector<std::string>& argv) {
  static int counter = 0;
  const fs::path dir = fs::temp_directory_path() / ("extmem-scan-run-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / (std::to_string(++counter) + ".out"), err = dir / (std::to_string(counter) + ".err");
  std::string cmd;
  for (const std::string& a : argv) cmd += quote(a) + " ";
  cmd += ">" + quote(out.string()) + " 2>" + quote(err.string()) + " </dev/null";
  const int status = std::system(cmd.c_str());
  Output o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = slurp(out);
  o.err = slurp(err);
  std::error_code ec;
  fs::remove(out, ec);
  fs::remove(err, ec);
  fs::remove(dir, ec);  // only once empty: another run may be writing there
  fs::remove(out);
  fs::remove(err);
  return o;
}

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::uint64_t num(const json& j) { return std::stoull(j.get<std::string>(), nullptr, 16); }

class ScanWalk : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("extmem-scan-" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    image_ = new std::string((*dir_ / "ram.img").string());
    Output g = run({kGenerator, *image_});
    ASSERT_EQ(g.code, 0) << g.err;
    planted_ = new json(json::parse(g.out));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    fs::remove_all(fs::temp_directory_path() / ("extmem-scan-run-" + std::to_string(::getpid())));
    delete dir_;
    delete image_;
    delete planted_;
  }
  static const json& planted() { return *planted_; }
  static const std::string& image() { return *image_; }
  static std::string ram_map() { return "--ram-map=" + planted()["ram_map"].get<std::string>(); }

  // Offsets of the hits of `scan IMAGE args... --json`.
  static std::set<std::uint64_t> offsets(const std::vector<std::string>& args, std::vector<json>* hits = nullptr) {
    std::vector<std::string> argv = {kBinary, "scan", image(), "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    Output o = run(argv);
    EXPECT_EQ(o.code, 0) << o.err;
    std::set<std::uint64_t> out;
    auto lines = json_lines(o.out);
    for (const json& h : lines) out.insert(num(h["offset"]));
    EXPECT_EQ(out.size(), lines.size()) << "a hit reported twice";
    if (hits != nullptr) *hits = std::move(lines);
    return out;
  }

  static fs::path* dir_;
  static std::string* image_;
  static json* planted_;
};
fs::path* ScanWalk::dir_ = nullptr;
std::string* ScanWalk::image_ = nullptr;
json* ScanWalk::planted_ = nullptr;

std::set<std::uint64_t> nums(const json& array) {
  std::set<std::uint64_t> out;
  for (const json& v : array) out.insert(num(v));
  return out;
}

TEST_F(ScanWalk, HexFindsEveryPlantedPatternAndNothingElse) {
  std::set<std::uint64_t> want = nums(planted()["pattern_at_page_offset"]);
  for (std::uint64_t o : nums(planted()["pattern_elsewhere"])) want.insert(o);
  EXPECT_EQ(offsets({"--hex=" + planted()["pattern"].get<std::string>()}), want);
  // The same bytes written with spaces; the near-miss (last byte differs) is never among them.
  EXPECT_EQ(offsets({"--hex=b1 7e 55 ed c0 de"}), want);
}

TEST_F(ScanWalk, PageOffsetChecksOnlyThatOffsetOfEachPage) {
  EXPECT_EQ(offsets({"--hex=" + planted()["pattern"].get<std::string>(),
                     "--page-offset=" + planted()["page_offset"].get<std::string>()}),
            nums(planted()["pattern_at_page_offset"]));
  EXPECT_TRUE(offsets({"--hex=" + planted()["pattern"].get<std::string>(), "--page-offset=0x59d"}).empty());
}

TEST_F(ScanWalk, RamMapTurnsFileOffsetsIntoGuestPhysical) {
  std::vector<json> hits;
  offsets({"--hex=" + planted()["pattern"].get<std::string>(), "--page-offset=0x59c", ram_map()}, &hits);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(num(hits[0]["gpa"]), 0x559cu);
  EXPECT_EQ(num(hits[2]["gpa"]), 0x10020059cu);  // file 0x60059c lies in the second range (file 4M = gpa 4G)
}

TEST_F(ScanWalk, PairsAreFoundInBothOrdersWithTheirNeighbours) {
  const json& p = planted()["pair"];
  std::vector<json> hits;
  // Only the two aligned copies: the misaligned one is not at a multiple of 8.
  EXPECT_EQ(offsets({"--u64=" + p["va"].get<std::string>(), "--context=1"}, &hits),
            (std::set<std::uint64_t>{num(p["pa_first_at"]) + 8, num(p["va_first_at"])}));
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(num(hits[0]["before"][0]), num(p["pa"]));  // pa, va: the pa is the word before
  EXPECT_EQ(num(hits[1]["after"][0]), num(p["pa"]));   // va, pa: the word after
  // The pa is found as well, its neighbour the va.
  EXPECT_EQ(offsets({"--u64=" + p["pa"].get<std::string>()}).size(), 2u);
}

TEST_F(ScanWalk, MarkerIsFoundAsAValueNotAsTheTextTail) {
  // The records, the decoy (zero field 1): both hold the aligned 32-bit value.
  std::set<std::uint64_t> markers;
  for (const json& r : planted()["records"]) markers.insert(num(r["marker_at"]));
  markers.insert(num(planted()["decoy_marker_at"]));
  EXPECT_EQ(offsets({"--u32=0x7461696c"}), markers);
  // Why "tail" is not found: 0x7461696c is stored little-endian as 6c 69 61 74
  // ("liat"); the ASCII spelling 74 61 69 6c never occurs. Searching its hex
  // bytes in memory order finds the records and the misaligned copy too.
  EXPECT_TRUE(offsets({"--hex=7461696c"}).empty());
  std::set<std::uint64_t> every = markers;
  every.insert(num(planted()["misaligned_marker_at"]));
  EXPECT_EQ(offsets({"--hex=6c696174"}), every);
  // Read as big-endian, the value 0x7461696c would be the bytes 74 61 69 6c: not there either.
  EXPECT_TRUE(offsets({"--u32=0x7461696c", "--byte-order=big"}).empty());
  EXPECT_EQ(offsets({"--u32=0x6c696174", "--byte-order=big"}), markers);
}

TEST_F(ScanWalk, RecordTemplateFindsTheRecordsAndDecodesTheirFields) {
  std::vector<json> hits;
  const auto found = offsets({"--record=va@-0x18:u64 size@-0x10:u64 zero@-0x8:u64=0 marker@0:u32=0x7461696c"}, &hits);
  ASSERT_EQ(hits.size(), planted()["records"].size());  // the decoy's zero field is 1
  for (std::size_t i = 0; i < hits.size(); ++i) {
    const json& r = planted()["records"][i];
    EXPECT_EQ(num(hits[i]["offset"]), num(r["marker_at"]));
    EXPECT_EQ(num(hits[i]["fields"]["va"]), num(r["va"]));
    EXPECT_EQ(num(hits[i]["fields"]["size"]), num(r["size"]));
    EXPECT_EQ(num(hits[i]["fields"]["zero"]), 0u);
  }
  // A constraint on another field narrows the set: only the 2 MiB record.
  EXPECT_EQ(offsets({"--record=size@-0x10:u64>=0x100000 zero@-0x8:u64=0 marker@0:u32=0x7461696c"}).size(), 1u);
}

TEST_F(ScanWalk, MaxStopsAfterThatManyHits) {
  Output o = run({kBinary, "scan", image(), "--u32=0x7461696c", "--max=2"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 2);
  EXPECT_NE(o.err.find("stopped at --max=2"), std::string::npos) << o.err;
}

TEST_F(ScanWalk, TextOutputShowsContextWords) {
  const json& p = planted()["pair"];
  Output o = run({kBinary, "scan", image(), "--u64=" + p["va"].get<std::string>(), "--context=1", "--max=1"});
  ASSERT_EQ(o.code, 0) << o.err;
  // The word after is background noise; the word before is the pair's pa.
  EXPECT_EQ(o.out.rfind("offset=0xb008 u64=0x00007f00cafe0000 context -0x8=0x0000000001234000 +0x8=0x", 0), 0u) << o.out;
}

// Walks VA with FORMAT and returns the JSON object of the walk.
json walk_json(const std::string& image, const std::string& ram_map, const std::string& format, const json& root,
               const json& va, bool all_chains, int expect_code) {
  std::vector<std::string> argv = {kBinary, "walk", "--image=" + image, ram_map, "--format=" + format,
                                   "--root=" + root.get<std::string>(), "--json", va.get<std::string>()};
  if (all_chains) argv.push_back("--all-chains");
  Output o = run(argv);
  EXPECT_EQ(o.code, expect_code) << o.out << o.err;
  auto lines = json_lines(o.out);
  EXPECT_EQ(lines.size(), 1u) << o.out << o.err;
  return lines.empty() ? json::object() : lines[0];
}

TEST_F(ScanWalk, X86WalksLandOnThePlantedPagesOrNameTheInvalidLevel) {
  const json& x = planted()["x86"];
  for (const json& w : x["walks"]) {
    SCOPED_TRACE(w.dump());
    const bool valid = w.contains("pa");
    json r = walk_json(image(), ram_map(), "x86-64", x["root"], w["va"], false, valid ? 0 : 1);
    ASSERT_EQ(r["chains"].size(), 1u);
    const json& c = r["chains"][0];
    if (valid) {
      EXPECT_EQ(num(r["pa"]), num(w["pa"]));
      EXPECT_EQ(c["page_size"], w["page_size"]);
    } else {
      EXPECT_TRUE(r["pa"].is_null());
      EXPECT_EQ(c["steps"].back()["level"], w["invalid_level"]);
      EXPECT_EQ(c["steps"].back()["decision"], "invalid");
    }
  }
}

TEST_F(ScanWalk, X86WalkStepsShowEachLevelInOrder) {
  const json& x = planted()["x86"];
  json r = walk_json(image(), ram_map(), "x86-64", x["root"], x["walks"][0]["va"], false, 0);
  const json& steps = r["chains"][0]["steps"];
  ASSERT_EQ(steps.size(), 4u);
  const char* names[] = {"PML4", "PDPT", "PD", "PT"};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(steps[i]["level"], names[i]);
  EXPECT_EQ(steps[0]["index"], 254);
  EXPECT_EQ(num(steps[0]["entry_pa"]), num(x["root"]) + 8 * 254);
  // The root table is in the second ram-map range: file 4M + 0x10000.
  EXPECT_EQ(num(steps[0]["file_offset"]), 0x410000u + 8 * 254);
  EXPECT_EQ(steps[3]["decision"], "leaf");
}

// The same tables under a PML5 (x86-64-la57): every walk ends where the 4-level one does.
TEST_F(ScanWalk, La57WalksThroughTheFifthLevelToTheSamePages) {
  const json& x = planted()["x86"];
  for (const json& w : x["walks"]) {
    SCOPED_TRACE(w.dump());
    const bool valid = w.contains("pa");
    json r = walk_json(image(), ram_map(), "x86-64-la57", x["la57_root"], w["va"], false, valid ? 0 : 1);
    const json& steps = r["chains"][0]["steps"];
    EXPECT_EQ(steps[0]["level"], "PML5");
    if (valid) {
      EXPECT_EQ(num(r["pa"]), num(w["pa"]));
      EXPECT_EQ(steps.size(), w["page_size"] == 4096 ? 5u : 4u);
    } else {
      EXPECT_EQ(steps.back()["level"], w["invalid_level"]);
    }
  }
}

// A 5-level root walked as 4-level fails at the top; the output names 5-level paging as the likely cause.
TEST_F(ScanWalk, FourLevelWalkFailingAtTheTopHintsAt5LevelPaging) {
  const json& x = planted()["x86"];
  Output o = run({kBinary, "walk", "--image=" + image(), ram_map(), "--format=x86-64",
                  "--root=" + x["la57_root"].get<std::string>(), x["walks"][0]["va"].get<std::string>()});
  EXPECT_EQ(o.code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("invalid entry at level PML4"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("hint: the root may use 5-level paging (CR4.LA57): try --format=x86-64-la57"),
            std::string::npos) << o.out;
  // Negative control: a walk that fails lower down gives no such hint.
  o = run({kBinary, "walk", "--image=" + image(), ram_map(), "--format=x86-64", "--root=" + x["root"].get<std::string>(),
           x["walks"][3]["va"].get<std::string>()});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("invalid entry at level PT"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("hint:"), std::string::npos) << o.out;
}

// CR3 pasted as QEMU prints it: 16 hex digits, no 0x, with a PCID in its low
// 12 bits and the no-flush bit 63: read as hex, flags dropped with a note, same walk.
TEST_F(ScanWalk, RootTakesACr3AsPrintedAndDropsItsFlagBits) {
  const json& x = planted()["x86"];
  const std::uint64_t root = num(x["root"]);
  const std::string cr3 = fmt::format("{:016x}", root | 0x8000000000000005ull);
  Output o = run({kBinary, "walk", "--image=" + image(), ram_map(), "--format=x86-64", "--root=" + cr3, "--json",
                  x["walks"][0]["va"].get<std::string>()});
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  auto lines = json_lines(o.out);
  ASSERT_EQ(lines.size(), 1u) << o.out;
  EXPECT_EQ(num(lines[0]["pa"]), num(x["walks"][0]["pa"]));
  EXPECT_EQ(num(lines[0]["root"]), root);
  EXPECT_EQ(num(lines[0]["root_given"]), root | 0x8000000000000005ull);
  EXPECT_NE(o.err.find(fmt::format("dropped {:#x}", 0x8000000000000005ull)), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("PCID"), std::string::npos) << o.err;
  // Zero-padded hex, as printed, with no flags: no note.
  o = run({kBinary, "walk", "--image=" + image(), ram_map(), "--format=x86-64", "--root=" + fmt::format("{:016x}", root),
           x["walks"][0]["va"].get<std::string>()});
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_EQ(o.err.find("note:"), std::string::npos) << o.err;
}

TEST_F(ScanWalk, GmmuWalksTakeTheFirstValidHalfOrEveryHalfWithAllChains) {
  const json& g = planted()["gmmu"];
  const std::string map = ram_map();
  for (const json& w : g["walks"]) {
    SCOPED_TRACE(w.dump());
    const bool valid = w.contains("pa");
    json r = walk_json(image(), map, "gmmu", g["root"], w["va"], false, valid ? 0 : 1);
    if (valid) {
      EXPECT_EQ(num(r["pa"]), num(w["pa"]));
    } else {
      EXPECT_EQ(r["chains"][0]["steps"].back()["level"], w["invalid_level"]);
    }
  }
  // The dual entry with both halves valid: big first; --all-chains walks both.
  const json& dual = g["walks"][0];
  json r = walk_json(image(), map, "gmmu", g["root"], dual["va"], true, 0);
  ASSERT_EQ(r["chains"].size(), 2u);
  EXPECT_EQ(r["chains"][0]["label"], "big");
  EXPECT_EQ(num(r["chains"][0]["pa"]), num(dual["pa"]));
  EXPECT_EQ(r["chains"][0]["page_size"], 65536);
  EXPECT_EQ(r["chains"][1]["label"], "small");
  EXPECT_EQ(num(r["chains"][1]["pa"]), num(dual["small_pa"]));
  EXPECT_EQ(r["chains"][1]["page_size"], 4096);
  // Big half invalid: the default walk records it and goes on with the small half.
  json r2 = walk_json(image(), map, "gmmu", g["root"], g["walks"][1]["va"], false, 0);
  const json& steps = r2["chains"][0]["steps"];
  ASSERT_GE(steps.size(), 5u);
  EXPECT_EQ(steps[3]["part"], "big");
  EXPECT_EQ(steps[3]["decision"], "invalid");
  EXPECT_EQ(steps[4]["part"], "small");
  // Both halves lead to invalid page entries: two chains, each naming its level.
  const json& bad = g["walks"][2];
  json r3 = walk_json(image(), map, "gmmu", g["root"], bad["va"], true, 1);
  ASSERT_EQ(r3["chains"].size(), 2u);
  EXPECT_EQ(r3["chains"][0]["steps"].back()["level"], bad["invalid_level"]);
  EXPECT_EQ(r3["chains"][1]["steps"].back()["level"], bad["small_invalid_level"]);
}

TEST_F(ScanWalk, FormatFileLoadsLikeTheBuiltIn) {
  const json& g = planted()["gmmu"];
  const std::string file = std::string(EXTMEM_SOURCE_DIR) + "/docs/walk-formats/gmmu.json";
  json r = walk_json(image(), ram_map(), file, g["root"], g["walks"][0]["va"], false, 0);
  EXPECT_EQ(num(r["pa"]), num(g["walks"][0]["pa"]));
}

// The worked example of docs/memtools.md: a record found, its va walked to a
// physical address, that address read through the ram-map with peek.
TEST_F(ScanWalk, RecordVaWalkedAndPeeked) {
  std::vector<json> hits;
  offsets({"--record=va@-0x18:u64 size@-0x10:u64 zero@-0x8:u64=0 marker@0:u32=0x7461696c"}, &hits);
  ASSERT_FALSE(hits.empty());
  const json va = hits[0]["fields"]["va"];
  json r = walk_json(image(), ram_map(), "x86-64", planted()["x86"]["root"], va, false, 0);
  const json& w = planted()["x86"]["walks"][0];
  ASSERT_EQ(num(r["pa"]), num(w["pa"]));
  Output o = run({kBinary, "peek", "--file=" + image(), ram_map(), "--width=8", r["pa"].get<std::string>()});
  ASSERT_EQ(o.code, 0) << o.err;
  char want[64];
  std::snprintf(want, sizeof want, "u64 = 0x%016llx", static_cast<unsigned long long>(num(w["payload"])));
  EXPECT_NE(o.out.find(want), std::string::npos) << o.out;
}

TEST_F(ScanWalk, ScanOfThisProcessFindsAPatternAcrossAChunkBorder) {
  // A mapping of our own with a unique pattern straddling the 1 MiB read-chunk border.
  // Between two inaccessible guard pages, so the kernel cannot merge it with a
  // neighbouring read-write mapping and change its size.
  const std::size_t size = 3 << 20, guard = 4096;
  void* region = ::mmap(nullptr, size + 2 * guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  void* p = static_cast<char*>(region) + guard;
  ASSERT_EQ(::mprotect(p, size, PROT_READ | PROT_WRITE), 0);
  auto* bytes = static_cast<unsigned char*>(p);
  const unsigned char pattern[] = {0x9d, 0x51, 0xe7, 0xa3, 0x3c, 0x88, 0x4b, 0xf1};
  // The constant itself may sit in this binary's read-only data too: only the two planted copies are checked.
  std::memcpy(bytes + (1 << 20) - 3, pattern, sizeof pattern);
  std::memcpy(bytes + (2 << 20) + 0x59c, pattern, sizeof pattern);
  // --match keeps the scan to that mapping (a sanitizer build reserves terabytes of shadow memory).
  Output o = run({kBinary, "scan", "--pid=" + std::to_string(::getpid()), "--match=size=3M,perms=rw-p,path=",
                  "--hex=9d51e7a33c884bf1", "--json"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::set<std::uint64_t> vas;
  for (const json& h : json_lines(o.out)) vas.insert(num(h["va"]));
  const auto base = reinterpret_cast<std::uint64_t>(p);
  EXPECT_TRUE(vas.count(base + (1 << 20) - 3)) << o.out;
  EXPECT_TRUE(vas.count(base + (2 << 20) + 0x59c)) << o.out;
  ::munmap(region, size + 2 * guard);
}

// Bad input: each row an argument list, the exit code, and a piece of the message.
struct BadInput {
  std::vector<std::string> args;  // after "extmem"; IMAGE and RAMMAP are replaced
  int code;
  std::string message;
};

TEST_F(ScanWalk, BadInputIsAClearErrorNeverACrash) {
  const std::string bad_format = (*dir_ / "bad-format.json").string();
  std::ofstream(bad_format) << "{\"name\": \"x\", \"va_bits\": 48, \"root\": \"A\", \"levels\": [{\"name\": \"A\", "
                               "\"shift\": 39, \"index_bits\": 9, \"entry_bytes\": 8, \"valid\": {\"mask\": 1}, "
                               "\"address\": {\"low\": 12, \"high\": 51, \"shift\": 12}, \"next\": \"B\"}]}";
  const std::string broken_json = (*dir_ / "broken.json").string();
  std::ofstream(broken_json) << "{\"name\": \"x\",, }";
  const std::string short_image = (*dir_ / "short.img").string();
  std::ofstream(short_image) << std::string(4096, '\0');
  const std::vector<BadInput> rows = {
      {{"scan", "IMAGE", "--hex=6c6z"}, 2, "expected a hexadecimal digit, found 'z'"},
      {{"scan", "IMAGE", "--hex=6c6"}, 2, "lone hexadecimal digit"},
      {{"scan", "IMAGE", "--hex= "}, 2, "unexpected ' ' (one separator between bytes)"},
      {{"scan", "IMAGE", "--hex=6c", "--u32=1"}, 2, "exactly one of"},
      {{"scan", "IMAGE", "--u32=0x100000000"}, 2, "does not fit in a 4-byte word"},
      {{"scan", "IMAGE", "--u32=1", "--byte-order=middle"}, 2, "unknown byte order"},
      {{"scan", "IMAGE", "--hex=6c", "--page-offset=4K"}, 2, "below the page size"},
      {{"scan", "IMAGE", "--u32=1", "--page-offset=4"}, 2, "--page-offset goes with --hex"},
      {{"scan", "IMAGE", "--hex=6c", "--context=2"}, 2, "--context goes with"},
      {{"scan", "IMAGE", "--record=va@-0x18:u64 marker@0:u32"}, 2, "no field has an =VALUE"},
      {{"scan", "IMAGE", "--record=va@-0x18:u65 m@0:u32=1"}, 2, "unknown type"},
      {{"scan", "IMAGE", "--record=va-0x18:u64"}, 2, "expected '@'"},
      {{"scan", "IMAGE", "--record=m@0:u8=256"}, 2, "does not fit in a 1-byte field"},
      {{"scan", "IMAGE", "--record=m@0:u32=1 m@4:u32=2"}, 2, "named twice"},
      {{"scan", "IMAGE", "--record=m@0x100000:u32=1"}, 2, "1 MiB or more"},
      {{"scan", "IMAGE", "--u32=1", "--ram-map=0:0:4M,0x1000:4M:4M"}, 2, "overlaps entry 1"},
      {{"scan", "SHORT", "--u32=1", "RAMMAP"}, 7, "the file is shorter than the ram-map says"},
      {{"scan", "/nonexistent/ram.img", "--u32=1"}, 5, "ENOENT"},
      {{"scan", "--pid=999999999", "--u32=1"}, 5, "ENOENT"},
      {{"scan", "--pid=12x", "--u32=1"}, 2, "bad --pid"},
      {{"scan", "IMAGE", "--pid=1", "--u32=1"}, 2, "one of them"},
      {{"scan", "IMAGE", "--match=size=4K", "--u32=1"}, 2, "--match goes with --pid"},
      {{"scan", "--pid=1", "--match=sise=4K", "--u32=1"}, 2, "unknown key \"sise\""},
      {{"walk", "--image=IMAGE", "RAMMAP", "--root=0x100010000", "--format=x86-64", "0x0000800000000000"}, 3,
       "not a canonical 48-bit address"},
      {{"walk", "--image=IMAGE", "RAMMAP", "--root=0x20000", "--format=gmmu", "0x2000000000000"}, 3,
       "above the 49-bit range"},
      {{"walk", "--image=IMAGE", "RAMMAP", "--root=0x90000000", "--format=x86-64", "0x7f0000001000"}, 3,
       "NOT_MAPPED"},
      {{"walk", "--image=IMAGE", "--root=0x800000", "--format=x86-64", "0x7f0000001000"}, 7, "PAST_END"},
      {{"walk", "--image=SHORT", "RAMMAP", "--root=0", "--format=x86-64", "0x1000"}, 7, "shorter than the ram-map"},
      {{"walk", "--image=IMAGE", "--root=0", "--format=nosuch", "0x1000"}, 2, "neither a built-in format"},
      {{"walk", "--image=IMAGE", "--root=0", "--format=BADFORMAT", "0x1000"}, 2, "no level is named \"B\""},
      {{"walk", "--image=IMAGE", "--root=0", "--format=BROKENJSON", "0x1000"}, 2, "bad --format"},
      {{"walk", "--image=IMAGE", "--root=0", "--format=x86-64", "0x7g"}, 2, "unexpected 'g'"},
      {{"walk", "--image=IMAGE", "--root=0x1q", "--format=x86-64", "0x1000"}, 2, "bad --root"},
      {{"walk", "--image=IMAGE", "--ram-map=0:0", "--root=0", "--format=x86-64", "0x1000"}, 2, "bad --ram-map"},
  };
  for (const BadInput& row : rows) {
    std::vector<std::string> argv = {kBinary};
    for (const std::string& a : row.args) {
      if (a == "IMAGE") argv.push_back(image());
      else if (a == "SHORT") argv.push_back(short_image);
      else if (a == "RAMMAP") argv.push_back(ram_map());
      else if (a == "BADFORMAT") argv.push_back(bad_format);
      else if (a == "BROKENJSON") argv.push_back(broken_json);
      else if (a.find("IMAGE") != std::string::npos) argv.push_back(a.substr(0, a.find("IMAGE")) + image());
      else if (a.find("SHORT") != std::string::npos) argv.push_back(a.substr(0, a.find("SHORT")) + short_image);
      else if (a.find("BADFORMAT") != std::string::npos) argv.push_back(a.substr(0, a.find("BADFORMAT")) + bad_format);
      else if (a.find("BROKENJSON") != std::string::npos) argv.push_back(a.substr(0, a.find("BROKENJSON")) + broken_json);
      else argv.push_back(a);
    }
    std::string shown;
    for (const std::string& a : row.args) shown += a + " ";
    SCOPED_TRACE(shown);
    Output o = run(argv);
    EXPECT_EQ(o.code, row.code) << o.out << o.err;
    EXPECT_NE(o.err.find(row.message), std::string::npos) << o.err;
  }
}

}  // namespace
