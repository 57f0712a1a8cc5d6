// `extmem scan --entropy` and `--twins` on a process (--pid, --match): the
// real binary against tests/programs/memtools_ticker, whose 16 KiB memfd
// holds the bytes i*7+1 (every page alike, 32 different bytes in every
// 32-byte block) except the 4-byte word at 0x1080 that it keeps changing.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_shell.h"

namespace {

using nlohmann::json;

// The ticker, started through a shell that prints its pid first; killed on destruction.
struct Ticker {
  FILE* out = nullptr;
  long pid = 0;
  std::uint64_t start = 0;
  Ticker() {
    const std::string cmd = "sh -c 'echo $$; exec " + std::string(EXTMEM_TEST_PROGRAMS_DIR) + "/memtools_ticker'";
    out = ::popen(cmd.c_str(), "r");
    char line[256];
    if (out == nullptr || std::fgets(line, sizeof line, out) == nullptr) return;
    pid = std::stol(line);
    if (std::fgets(line, sizeof line, out) == nullptr) return;
    start = std::stoull(json::parse(line)["start"].get<std::string>(), nullptr, 16);
  }
  ~Ticker() {
    if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
    if (out != nullptr) ::pclose(out);
  }
  std::string args(const std::string& search) const {
    return "scan --pid=" + std::to_string(pid) + " --match='path^=/memfd:extmem-ticker' " + search + " --json";
  }
};

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  for (std::size_t pos = 0, nl; pos < text.size(); pos = nl + 1) {
    nl = text.find('\n', pos);
    if (text[pos] == '{') out.push_back(json::parse(text.substr(pos, nl - pos)));
    if (nl == std::string::npos) break;
  }
  return out;
}

std::uint64_t num(const json& j) { return std::stoull(j.get<std::string>(), nullptr, 16); }

TEST(BlockScanProcess, EntropyRunsStopAtTheChangingWord) {
  Ticker t;
  ASSERT_NE(t.start, 0u);
  const auto r = extmem::test::run_extmem(t.args("--entropy=4.9"));
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<json> runs = json_lines(r.out);
  // The block at 0x1080 holds the word (0x10 then zeros, more as it counts): fewer distinct bytes.
  ASSERT_EQ(runs.size(), 2u) << r.out;
  EXPECT_EQ(num(runs[0]["va"]), t.start);
  EXPECT_EQ(runs[0]["bytes"], 0x1080);
  EXPECT_EQ(num(runs[1]["va"]), t.start + 0x10a0);
  EXPECT_EQ(runs[1]["bytes"], 0x4000 - 0x10a0);
}

TEST(BlockScanProcess, TwinPagesAreTheThreeUnchangedOnes) {
  Ticker t;
  ASSERT_NE(t.start, 0u);
  const auto r = extmem::test::run_extmem(t.args("--twins"));
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<json> groups = json_lines(r.out);
  ASSERT_EQ(groups.size(), 1u) << r.out;
  ASSERT_EQ(groups[0]["count"], 3);
  EXPECT_EQ(num(groups[0]["vas"][0]), t.start);
  EXPECT_EQ(num(groups[0]["vas"][1]), t.start + 0x2000);
  EXPECT_EQ(num(groups[0]["vas"][2]), t.start + 0x3000);
}

// A valid SPEC that matches nothing is no usage error: every form searches
// nothing (exit 0) and says on one line that no mapping matched.
TEST(BlockScanProcess, NoMatchingMappingIsNothingToScanForEveryForm) {
  Ticker t;
  ASSERT_NE(t.start, 0u);
  for (const char* search : {"--twins", "--entropy=4.5", "--hex=deadbeef"}) {
    const auto r = extmem::test::run_extmem("scan --pid=" + std::to_string(t.pid) + " --match='path=/nonexistent' " +
                                            search);
    EXPECT_EQ(r.code, 0) << search << ": " << r.out;
    EXPECT_NE(r.out.find("nothing to scan: no readable mapping of pid " + std::to_string(t.pid)), std::string::npos)
        << search << ": " << r.out;
    EXPECT_NE(r.out.find("matches --match"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" in 0 (0 bytes)"), std::string::npos) << search << ": " << r.out;
    EXPECT_EQ(r.out.find("copy mappings"), std::string::npos) << r.out;
  }
}

// The same exit status (5, no such process) and message as the other scan forms.
TEST(BlockScanProcess, AProcessThatIsGoneIsNoProcess) {
  for (const char* search : {"--entropy=4", "--twins"}) {
    const auto r = extmem::test::run_extmem(std::string("scan --pid=999999999 ") + search);
    EXPECT_EQ(r.code, 5) << search << ": " << r.out;
    EXPECT_NE(r.out.find("open /proc/999999999/maps: ENOENT"), std::string::npos) << r.out;
  }
}

}  // namespace
