// A file that shrinks while `extmem scan` / `extmem diff` read it (another
// process truncating a RAM image): a clear error with exit 7, never a SIGBUS
// death nor a quiet "0 hits". Deterministic through the test hook
// EXTMEM_TEST_STOP_AFTER_MAP (src/memtools/mapping_guard.h): the real binary
// stops itself once the file is mapped (or, for the read form of
// --page-offset, opened), the test truncates the file, then continues it.
// Also the summaries of --max stops (what was really scanned up to the stop).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "memtools/mapping_guard.h"

namespace {

namespace fs = std::filesystem;

struct ToolRun {
  bool exited = false;
  int code = -1;
  int signal = 0;
  bool stopped_seen = false;  // the hook's SIGSTOP was seen (and the file truncated then)
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void pause_ms(long ms) {
  const timespec t{ms / 1000, (ms % 1000) * 1000000};
  ::nanosleep(&t, nullptr);
}

// Runs `extmem ARGS` with stdout/stderr to files in `dir`. With `shrink_to`
// >= 0, sets EXTMEM_TEST_STOP_AFTER_MAP, waits for the stop, truncates `file`
// to that many bytes and continues the process. Killed after 60 s.
ToolRun run_extmem(const std::vector<std::string>& args, const fs::path& dir, const fs::path& file = {},
               long long shrink_to = -1) {
  ToolRun o;
  const fs::path out = dir / "stdout", err = dir / "stderr";
  std::vector<std::string> copy = {EXTMEM_BINARY};
  copy.insert(copy.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in_fd = ::open("/dev/null", O_RDONLY);
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) ::_exit(126);
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    if (shrink_to >= 0) ::setenv("EXTMEM_TEST_STOP_AFTER_MAP", "1", 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return o;
  }
  int status = 0;
  for (long waited = 0;; waited += 5) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG | WUNTRACED);
    if (r == pid && WIFSTOPPED(status)) {
      o.stopped_seen = true;
      if (::truncate(file.c_str(), static_cast<off_t>(shrink_to)) != 0) ADD_FAILURE() << "truncate: " << std::strerror(errno);
      ::kill(pid, SIGCONT);
      continue;
    }
    if (r == pid) break;
    if (waited >= 60000) ::kill(pid, SIGKILL);
    pause_ms(5);
  }
  o.exited = WIFEXITED(status);
  o.code = o.exited ? WEXITSTATUS(status) : -1;
  o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

class MemtoolsShrink : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/extmem-shrink-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    file_ = dir_ / "tr.bin";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A sparse file of `bytes` (zeros, nothing on disk): several pieces of work.
  void make_sparse(std::uint64_t bytes) {
    std::ofstream(file_).flush();
    ASSERT_EQ(::truncate(file_.c_str(), static_cast<off_t>(bytes)), 0) << std::strerror(errno);
  }
  void write_file(const std::vector<std::uint8_t>& data) {
    std::ofstream f(file_, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }

  // Truncates the file to 4 KiB after it was mapped: exit 7 naming the shrink.
  void expect_shrink_reported(std::vector<std::string> args) {
    constexpr std::uint64_t kBytes = 96ull << 20;  // six 16 MiB pieces
    make_sparse(kBytes);
    const ToolRun r = run_extmem(args, dir_, file_, 4096);
    std::string shown;
    for (const std::string& a : args) shown += a + " ";
    EXPECT_TRUE(r.stopped_seen) << shown;
    ASSERT_TRUE(r.exited) << shown << ": signal " << r.signal << "\n" << r.err;
    EXPECT_EQ(r.code, 7) << shown << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("shrank while it was read: 4096 bytes now, was " + std::to_string(kBytes)), std::string::npos)
        << shown << "\n" << r.err;
    EXPECT_EQ(r.err.find(" hits in "), std::string::npos) << shown << ": no summary after an error\n" << r.err;
  }

  fs::path dir_, file_;
};

TEST_F(MemtoolsShrink, HexSearchOfAMappedFileThatShrinksIsExitSevenNotSigbus) {
  expect_shrink_reported({"scan", "--hex=deadbeef", file_.string()});
}

TEST_F(MemtoolsShrink, MappedPageOffsetFormsReportTheShrink) {
  // Page size over 64K, and a needle crossing the page end: both stay on the mapping.
  expect_shrink_reported({"scan", "--hex=deadbeef", "--page-offset=0x100", "--page-size=1M", file_.string()});
  expect_shrink_reported({"scan", "--hex=deadbeef", "--page-offset=0xffe", file_.string()});
}

TEST_F(MemtoolsShrink, ReadFormOfPageOffsetReportsTheShrinkInsteadOfZeroHits) {
  expect_shrink_reported({"scan", "--hex=deadbeef", "--page-offset=0x100", file_.string()});
}

TEST_F(MemtoolsShrink, TwinsAndEntropyReportTheShrink) {
  expect_shrink_reported({"scan", "--twins", file_.string()});
  expect_shrink_reported({"scan", "--entropy=4.5", file_.string()});
}

TEST_F(MemtoolsShrink, DiffOfAFileThatShrinksIsExitSeven) {
  expect_shrink_reported({"diff", "--interval=1ms", "--file=" + file_.string()});
}

// Cut inside its last page: no read faults (the page's bytes past the end
// read as zeros), but the file is shorter than what was searched.
TEST_F(MemtoolsShrink, AShrinkWithinTheLastPageIsReportedToo) {
  for (const char* search : {"--hex=deadbeef", "--twins"}) {
    make_sparse(8192);
    const ToolRun r = run_extmem({"scan", search, file_.string()}, dir_, file_, 5000);
    ASSERT_TRUE(r.exited) << search << ": signal " << r.signal;
    EXPECT_EQ(r.code, 7) << search << "\n" << r.err;
    EXPECT_NE(r.err.find("shrank while it was read: 5000 bytes now, was 8192"), std::string::npos) << r.err;
  }
  make_sparse(8192);
  const ToolRun d = run_extmem({"diff", "--interval=1ms", "--file=" + file_.string()}, dir_, file_, 5000);
  EXPECT_EQ(d.code, 7) << d.err;
}

TEST_F(MemtoolsShrink, AFileThatDoesNotShrinkIsScannedAsBefore) {
  make_sparse(32ull << 20);
  const ToolRun r = run_extmem({"scan", "--hex=deadbeef", file_.string()}, dir_);
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("0 hits in 32M (33554432 bytes)"), std::string::npos) << r.err;
}

// Random bytes: high entropy, never constant, no two pages alike.
std::vector<std::uint8_t> noise(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(g());
  return v;
}

TEST_F(MemtoolsShrink, TwinsMaxCountsOnlyTheBlocksBeforeTheStop) {
  // Two distinct pages, then 100 zero pages: --max=1 stops at the second page.
  std::vector<std::uint8_t> data = noise(2 * 4096, 1);
  data.resize(102 * 4096, 0);
  write_file(data);
  const ToolRun r = run_extmem({"scan", "--twins", "--max=1", file_.string()}, dir_);
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("among 1 blocks of 4K (0 constant, left out; 1 distinct) in 4K (4096 bytes)"), std::string::npos)
      << r.err;
}

TEST_F(MemtoolsShrink, TwinsMaxCountsTheConstantBlocksBeforeTheStop) {
  // Distinct, zero, zero, distinct: stopped at page 3, two constant ones before it.
  std::vector<std::uint8_t> data = noise(4096, 2);
  data.resize(3 * 4096, 0);
  const std::vector<std::uint8_t> last = noise(4096, 3);
  data.insert(data.end(), last.begin(), last.end());
  data.resize(10 * 4096, 0);
  write_file(data);
  const ToolRun r = run_extmem({"scan", "--twins", "--max=1", file_.string()}, dir_);
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_NE(r.err.find("among 3 blocks of 4K (2 constant, left out; 1 distinct) in 12K (12288 bytes)"),
            std::string::npos)
      << r.err;
}

TEST_F(MemtoolsShrink, EntropyMaxCountsTheBytesSearched) {
  std::vector<std::uint8_t> data = noise(4096, 4);
  data.resize(2 * 4096, 0);
  const std::vector<std::uint8_t> last = noise(4096, 5);
  data.insert(data.end(), last.begin(), last.end());
  write_file(data);
  const ToolRun r = run_extmem({"scan", "--entropy=4.5/4K", "--max=1", file_.string()}, dir_);
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("1 run of 4096-byte blocks"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("in 12K (12288 bytes)"), std::string::npos) << r.err;
}

TEST_F(MemtoolsShrink, ReadFormPageOffsetMaxCountsTheBytesSearched) {
  std::vector<std::uint8_t> data(2 * 4096, 0);
  for (std::size_t page : {0u, 1u}) {
    const std::uint8_t needle[] = {0xde, 0xad, 0xbe, 0xef};
    std::memcpy(data.data() + page * 4096 + 0x100, needle, 4);
  }
  write_file(data);
  const ToolRun r = run_extmem({"scan", "--hex=deadbeef", "--page-offset=0x100", "--max=1", file_.string()}, dir_);
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("1 hit in 8K (8192 bytes)"), std::string::npos) << r.err;
}

// The guard itself, in this process: threads reading a mapping whose file was
// cut to one page carry on (zeros), the guard says it faulted and names the
// sizes; a mapping without a guard still dies of the SIGBUS (in a child: by
// the signal, or by the sanitizer's report of it).
TEST_F(MemtoolsShrink, GuardTurnsTheFaultsOfEveryThreadIntoOneFlag) {
  constexpr std::size_t kBytes = 32u << 20;
  make_sparse(kBytes);
  const int fd = ::open(file_.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  void* addr = ::mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(addr, MAP_FAILED) << std::strerror(errno);
  {
    const extmem::memtools::detail::MappingGuard guard(addr, kBytes, fd, file_.string());
    EXPECT_FALSE(guard.faulted());
    ASSERT_EQ(::ftruncate(fd, 4096), 0);
    std::vector<std::thread> threads;
    std::vector<unsigned> sums(4, 0);
    for (std::size_t t = 0; t < sums.size(); ++t) {
      threads.emplace_back([&sums, addr, t] {
        const auto* p = static_cast<const volatile std::uint8_t*>(addr);
        for (std::size_t at = t * (kBytes / 4); at < (t + 1) * (kBytes / 4); at += 4096) sums[t] += p[at];
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_TRUE(guard.faulted());
    EXPECT_FALSE(guard.check());
    EXPECT_EQ(guard.shrank_error().code, "PAST_END");
    EXPECT_NE(guard.shrank_error().message().find("4096 bytes now, was " + std::to_string(kBytes)), std::string::npos)
        << guard.shrank_error().message();
  }
  ASSERT_EQ(::munmap(addr, kBytes), 0);
  void* bare = ::mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(bare, MAP_FAILED);
  const pid_t child = ::fork();
  if (child == 0) {
    volatile std::uint8_t v = static_cast<const volatile std::uint8_t*>(bare)[1 << 20];
    (void)v;
    ::_exit(0);  // not reached: the read past the end faults
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "an unguarded read past the end went on";
  ::munmap(bare, kBytes);
  ::close(fd);
}

}  // namespace
