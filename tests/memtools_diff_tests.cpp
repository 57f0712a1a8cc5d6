// `extmem diff`: the word comparison on buffers, then the real binary against
// a real process that changes one word every 50 ms (tests/programs/memtools_ticker)
// and against a real file changed by a real `extmem poke` run between the snapshots.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/memtools/diff.h"
#include "extmem/memtools/diff_command.h"
#include "support/run_shell.h"
#include "support/temp_files.h"

namespace {

using extmem::memtools::diff_words;
using extmem::memtools::PageChanges;
using nlohmann::json;

const std::string kTicker = std::string(EXTMEM_TEST_PROGRAMS_DIR) + "/memtools_ticker";

std::uint64_t num(const json& j) { return std::stoull(j.get<std::string>(), nullptr, 16); }

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    if (!line.empty() && line[0] == '{') out.push_back(json::parse(line));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return out;
}

// A running program whose stdout we read; killed and reaped on destruction.
struct Running {
  pid_t pid = -1;
  FILE* out = nullptr;
  explicit Running(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out = ::fdopen(fds[0], "r");
  }
  std::string line() {
    char buf[4096];
    return out != nullptr && std::fgets(buf, sizeof buf, out) != nullptr ? std::string(buf) : std::string();
  }
  int wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  ~Running() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out != nullptr) std::fclose(out);
  }
};

TEST(DiffWords, ReportsOnlyChangedWordsGroupedByPage) {
  std::vector<std::uint8_t> a(3 * 4096, 0x11), b = a;
  b[4096 + 8] = 0x22;       // page 1, word at +8
  b[2 * 4096 + 0] = 0x33;   // page 2, word at +0
  b[2 * 4096 + 12] = 0x44;  // page 2, word at +12
  std::vector<PageChanges> pages;
  EXPECT_EQ(diff_words(a.data(), b.data(), a.size(), 0x10000, 4, 7, 8, pages), 3u);
  ASSERT_EQ(pages.size(), 2u);
  EXPECT_EQ(pages[0].page, 0x11000u);
  EXPECT_EQ(pages[0].region, 7u);
  ASSERT_EQ(pages[0].words.size(), 1u);
  EXPECT_EQ(pages[0].words[0].address, 0x11008u);
  EXPECT_EQ(pages[0].words[0].old_value, 0x11111111u);
  EXPECT_EQ(pages[0].words[0].new_value, 0x11111122u);
  EXPECT_EQ(pages[1].page, 0x12000u);
  EXPECT_EQ(pages[1].changed, 2u);
}

TEST(DiffWords, CountsEveryChangeButKeepsAtMostTheLimit) {
  std::vector<std::uint8_t> a(4096, 0), b(4096, 1);
  std::vector<PageChanges> pages;
  EXPECT_EQ(diff_words(a.data(), b.data(), a.size(), 0, 8, 0, 3, pages), 512u);
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0].changed, 512u);
  EXPECT_EQ(pages[0].words.size(), 3u);
}

TEST(DiffWords, PagesFollowTheAddressNotTheBufferStart) {
  // A buffer starting 8 bytes before a page border: the two words fall in two pages.
  std::vector<std::uint8_t> a(16, 0), b(16, 0xff);
  std::vector<PageChanges> pages;
  EXPECT_EQ(diff_words(a.data(), b.data(), a.size(), 0x1ff8, 8, 0, 8, pages), 2u);
  ASSERT_EQ(pages.size(), 2u);
  EXPECT_EQ(pages[0].page, 0x1000u);
  EXPECT_EQ(pages[1].page, 0x2000u);
}

TEST(DiffRanges, ParsesHexAddressesAndSizedLengths) {
  auto r = extmem::memtools::parse_ranges("100000000:64K,0n4096:0x10");
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], (std::pair<std::uint64_t, std::uint64_t>{0x100000000, 65536}));
  EXPECT_EQ((*r)[1], (std::pair<std::uint64_t, std::uint64_t>{4096, 16}));
  extmem::memtools::SyntaxError bad;
  EXPECT_FALSE(extmem::memtools::parse_ranges("1000:0", &bad));
  EXPECT_EQ(bad.column, 5u);
  EXPECT_FALSE(extmem::memtools::parse_ranges("1000", &bad));
  EXPECT_FALSE(extmem::memtools::parse_ranges("ffffffffffffffff:2", &bad));
}

// The ticker changes one word; diff names exactly that word of that page, and says the target ran on.
TEST(DiffProcess, FindsTheOneWordTheTickerChanges) {
  Running ticker({kTicker});
  const json where = json::parse(ticker.line());
  const std::uint64_t start = num(where["start"]), word = num(where["word"]);
  auto r = extmem::test::run_extmem("diff --pid=" + std::to_string(ticker.pid) +
                                    " --match='path^=/memfd:extmem-ticker' --interval=300ms --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<json> lines = json_lines(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines.front()["kind"], "start");
  EXPECT_NE(lines.front()["note"].get<std::string>().find("not stopped"), std::string::npos);
  ASSERT_EQ(lines[1]["kind"], "page") << r.out;
  EXPECT_EQ(num(lines[1]["va"]), start + 0x1000);
  EXPECT_EQ(lines[1]["changed"], 1);
  ASSERT_EQ(lines[1]["words"].size(), 1u);
  EXPECT_EQ(num(lines[1]["words"][0]["va"]), word);
  EXPECT_GT(num(lines[1]["words"][0]["new"]), num(lines[1]["words"][0]["old"]));
  EXPECT_EQ(lines.back()["kind"], "round");
  EXPECT_EQ(lines.back()["changed_words"], 1);
  EXPECT_EQ(lines.back()["changed_pages"], 1);
  EXPECT_EQ(lines.back()["bytes"], 16384);
}

// Negative control for the test above: pages the ticker never writes (0, 2, 3)
// are never reported, round after round, and each round compares against the one before.
TEST(DiffProcess, UnchangedPagesAreNotReported) {
  Running ticker({kTicker});
  const json where = json::parse(ticker.line());
  const std::uint64_t start = num(where["start"]);
  auto r = extmem::test::run_extmem("diff --pid=" + std::to_string(ticker.pid) +
                                    " --match='path^=/memfd:extmem-ticker' --interval=300ms --watch --rounds=2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("# round 1 (after 300ms): 1 word changed in 1 page of 16K compared"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# round 2 (after 300ms): 1 word changed in 1 page of 16K compared"), std::string::npos) << r.out;
  for (std::uint64_t page : {start, start + 0x2000, start + 0x3000})
    EXPECT_EQ(r.out.find(fmt::format("page {:#x}:", page)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("page {:#x}:", start + 0x1000)), std::string::npos) << r.out;
}

TEST(DiffProcess, AProcessThatEndsMeanwhileIsNoProcessNotAnEmptyDiff) {
  Running ticker({kTicker});
  (void)ticker.line();
  Running diff({EXTMEM_BINARY, "diff", "--pid=" + std::to_string(ticker.pid), "--match=path^=/memfd:extmem-ticker",
                "--interval=3s"});
  // The header is printed after the first snapshot: end the target then.
  EXPECT_NE(diff.line().find("# extmem diff: pid"), std::string::npos);
  ::kill(ticker.pid, SIGKILL);
  ticker.wait();
  EXPECT_EQ(diff.wait(), 5);  // kExitNoProcess
}

class DiffFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<char> bytes(65536);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 251 + 1);
    std::ofstream(image_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  extmem::test::TempDir dir_;
  std::string image_ = dir_.file("ram.img");
};

// A real poke between the snapshots: diff names the GPA and file offset of the one word it wrote.
TEST_F(DiffFile, AroundACommandShowsTheWordItWroteByGuestPhysicalAddress) {
  const std::string map = "--ram-map=0x100000000:0:64K";
  auto r = extmem::test::run_extmem("diff --file=" + image_ + " " + map + " --json -- " + EXTMEM_BINARY +
                                    " poke --file=" + image_ + " " + map + " --audit=" + dir_.file("audit") +
                                    " 0x100002008 0x12345678");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<json> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(num(lines[1]["gpa"]), 0x100002000u);
  ASSERT_EQ(lines[1]["words"].size(), 1u);
  EXPECT_EQ(num(lines[1]["words"][0]["gpa"]), 0x100002008u);
  EXPECT_EQ(num(lines[1]["words"][0]["file_offset"]), 0x2008u);
  EXPECT_EQ(num(lines[1]["words"][0]["new"]), 0x12345678u);
  EXPECT_NE(lines[2]["after"].get<std::string>().find("exit 0"), std::string::npos);
  // The poke's audit line names the guest-physical address it wrote, beside the file offset.
  const std::string audit = extmem::test::slurp(dir_.file("audit"));
  EXPECT_NE(audit.find("offset=0x2008 gpa=0x100002008"), std::string::npos) << audit;
}

TEST_F(DiffFile, RangeLimitsTheComparisonAndNothingElseIsReported) {
  auto r = extmem::test::run_extmem("diff --file=" + image_ + " --range=0x4000:4K --width=8 -- " + EXTMEM_BINARY +
                                    " poke --file=" + image_ + " --audit=" + dir_.file("audit") + " 0x8000 7");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("0 words changed in 0 pages of 4K compared"), std::string::npos) << r.out;
}

// Changes in pieces read by different threads (4 MiB apart in a 12 MiB file)
// come out most-changed page first, then by address.
TEST(DiffFileLarge, PagesAreOrderedByChangesAcrossPieces) {
  extmem::test::TempDir dir;
  const std::string image = dir.file("big.img");
  {
    std::vector<char> bytes(12u << 20, 'x');
    std::ofstream(image, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string poke = std::string(EXTMEM_BINARY) + " poke --file=" + image + " --audit=" + dir.file("audit") + " ";
  // One word in page 0xa00000, two in page 0x100000, one in page 0x500000.
  const std::string cmd = poke + "0xa00010 1 && " + poke + "0x100020 2 && " + poke + "0x100ff0 3 && " + poke + "0x500000 4";
  auto r = extmem::test::run_extmem("diff --file=" + image + " --json -- sh -c '" + cmd + " >/dev/null'");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<json> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(num(lines[1]["offset"]), 0x100000u);
  EXPECT_EQ(lines[1]["changed"], 2);
  EXPECT_EQ(num(lines[2]["offset"]), 0x500000u);
  EXPECT_EQ(num(lines[3]["offset"]), 0xa00000u);
  EXPECT_EQ(lines[4]["changed_words"], 4);
}

TEST_F(DiffFile, ARangePastTheEndIsRefusedBeforeAnySnapshot) {
  auto r = extmem::test::run_extmem("diff --file=" + image_ + " --range=0xf000:8K --interval=1ms");
  EXPECT_EQ(r.code, 7) << r.out;
  EXPECT_NE(r.out.find("past the end"), std::string::npos) << r.out;
}

}  // namespace
