// Bad input across every subcommand of the real `extmem` binary: one table of
// invalid values for every option (sizes, durations, addresses, pids, row names,
// SPECs, files that are missing, directories, FIFOs, /dev/zero, empty strings,
// very long or non-UTF-8 text). Each row must exit 2 within a few seconds, print
// nothing on stdout, and say on stderr which option was wrong and what is
// accepted. Other subcommands add their rows to kCases.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::string kBinary = EXTMEM_BINARY;

// How a run ended and what it printed.
struct Output {
  bool exited = false;
  int code = -1;
  int signal = 0;
  bool timed_out = false;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `extmem ARGS...` with stdin from /dev/null and stdout/stderr to files in
// `dir`; kills it after `limit_s` (a hang is a finding too).
Output run_extmem(const std::vector<std::string>& args, const fs::path& dir, double limit_s = 10) {
  Output o;
  const fs::path out = dir / "stdout", err = dir / "stderr";
  std::vector<std::string> copy = {kBinary};
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
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return o;
  }
  int status = 0;
  for (double waited = 0;; waited += 0.005) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (waited >= limit_s && !o.timed_out) {
      o.timed_out = true;
      ::kill(pid, SIGKILL);
    }
    const timespec pause{0, 5000000};
    ::nanosleep(&pause, nullptr);
  }
  o.exited = WIFEXITED(status);
  o.code = o.exited ? WEXITSTATUS(status) : -1;
  o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

// Fixtures the rows refer to as placeholders in their arguments:
//   @DIR     a directory            @FIFO    a FIFO nobody writes
//   @FILE    an empty regular file  @MISSING a path that does not exist
//   @ZOMBIE  a child that exited and is not reaped   @SELF  this test's pid
class CliBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/extmem-bad-input-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    fs::create_directory(dir_ / "dir");
    ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0) << std::strerror(errno);
    std::ofstream(dir_ / "file").flush();
    zombie_ = ::fork();
    if (zombie_ == 0) ::_exit(0);
    // Wait until it really is a zombie (state Z), without reaping it.
    for (int i = 0; i < 2000 && !is_zombie(zombie_); ++i) {
      const timespec pause{0, 1000000};
      ::nanosleep(&pause, nullptr);
    }
    ASSERT_TRUE(is_zombie(zombie_));
  }
  void TearDown() override {
    if (zombie_ > 0) ::waitpid(zombie_, nullptr, 0);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static bool is_zombie(pid_t pid) {
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
  }

  std::string expand(std::string s) const {
    const std::pair<std::string, std::string> subs[] = {
        {"@DIR", (dir_ / "dir").string()},   {"@FIFO", (dir_ / "fifo").string()},
        {"@FILE", (dir_ / "file").string()}, {"@MISSING", (dir_ / "missing" / "x").string()},
        {"@ZOMBIE", std::to_string(zombie_)}, {"@SELF", std::to_string(::getpid())},
    };
    for (const auto& [key, value] : subs)
      for (std::size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), value);
    return s;
  }

  fs::path dir_;
  pid_t zombie_ = -1;
};

struct Case {
  std::vector<std::string> args;
  std::vector<std::string> expect;  // each must appear in stderr (after placeholder expansion)
};

const std::string kLong(5000, '9');
const std::string kNonUtf8 = "\xff\xfe\x80";

// clang-format off
const std::vector<Case> kCases = {
    // ---- probe ----
    {{"probe", "--size="}, {"--size", "empty", "multiple of 4096"}},
    {{"probe", "--size=abc"}, {"--size", "multiple of 4096"}},
    {{"probe", "--size=-4096"}, {"--size", "multiple of 4096"}},
    {{"probe", "--size=4097"}, {"--size", "multiple of 4096"}},
    {{"probe", "--size=4096"}, {"--size", "at least 32768"}},
    {{"probe", "--size=" + kLong}, {"--size", "multiple of 4096"}},
    {{"probe", "--size=18446744073709551615"}, {"--size", "multiple of 4096"}},
    {{"probe", "--size=1099511627776"}, {"--size", "heap"}},
    {{"probe", "--timeout=0"}, {"--timeout", "a duration from 1ms to 1h"}},
    {{"probe", "--timeout=nan"}, {"--timeout", "a duration from 1ms to 1h"}},
    {{"probe", "--timeout=inf"}, {"--timeout", "a duration from 1ms to 1h"}},
    {{"probe", "--timeout=3601"}, {"--timeout", "a duration from 1ms to 1h"}},
    {{"probe", "--timeout="}, {"--timeout", "empty", "1h"}},
    {{"probe", "--soak=-1"}, {"--soak", "a duration from 0ms to 1h"}},
    {{"probe", "--soak=1x"}, {"--soak", "a duration from 0ms to 1h"}},
    {{"probe", "--only=NoSuchRow"}, {"--only", "T1-opaque-fd"}},
    {{"probe", "--only=" + kNonUtf8}, {"--only", "T1-opaque-fd"}},
    {{"probe", "--only=", "--no-gles"}, {"--only", "empty", "row names"}},
    {{"probe", "--only", ""}, {"--only", "T1-opaque-fd"}},
    {{"probe", "--device=99"}, {"--device", "INDEX"}},
    {{"probe", "--device=-1"}, {"--device", "INDEX"}},
    {{"probe", "--device=", "--no-gles"}, {"--device", "empty", "INDEX"}},
    {{"probe", "--device", ""}, {"--device", "INDEX"}},
    {{"probe", "--device=" + kLong}, {"--device", "INDEX"}},
    {{"probe", "--json=@MISSING"}, {"--json", "ENOENT"}},
    {{"probe", "--json=@DIR"}, {"--json", "director"}},
    {{"probe", "--json="}, {"--json", "empty"}},
    {{"probe", "--json", ""}, {"--json", "empty"}},
    {{"probe", "--no-such-option"}, {"--no-such-option", "--help"}},
    // ---- watch ----
    {{"watch"}, {"COMMAND / --pid", "nothing to watch"}},
    {{"watch", "--pid=@SELF", "--", "true"}, {"COMMAND / --pid", "not both"}},
    {{"watch", "--period=100x", "--", "true"}, {"--period", "unit ms, s, m or h"}},
    {{"watch", "--period=0ms", "--", "true"}, {"--period", "accepted"}},
    {{"watch", "--period=2h", "--", "true"}, {"--period", "1ms to 1h"}},
    {{"watch", "--period=-1s", "--", "true"}, {"--period"}},
    {{"watch", "--period=", "--", "true"}, {"--period"}},
    {{"watch", "--period=" + kLong + "s", "--", "true"}, {"--period"}},
    {{"watch", "--duration=soon", "--", "true"}, {"--duration"}},
    {{"watch", "--duration=1e400s", "--", "true"}, {"--duration"}},
    {{"watch", "--format=xml", "--", "true"}, {"--format", "tsv, csv or jsonl"}},
    {{"watch", "--pid=abc"}, {"--pid", "process id"}},
    {{"watch", "--pid=0"}, {"--pid", "process id"}},
    {{"watch", "--pid=-5"}, {"--pid", "process id"}},
    {{"watch", "--pid=99999999999"}, {"--pid", "process id"}},
    {{"watch", "--pid=2147483000"}, {"--pid", "not a running process"}},
    {{"watch", "--pid=@ZOMBIE"}, {"--pid", "@ZOMBIE"}},
    {{"watch", "--budget=0", "--", "true"}, {"--budget", "greater than 0"}},
    {{"watch", "--budget=abc", "--", "true"}, {"--budget"}},
    {{"watch", "--warmup=150%", "--", "true"}, {"--warmup", "below 100%"}},
    {{"watch", "--warmup=xyz", "--", "true"}, {"--warmup", "duration"}},
    {{"watch", "--out=@MISSING", "--", "true"}, {"--out", "ENOENT"}},
    {{"watch", "--out=@DIR", "--", "true"}, {"--out", "director"}},
    {{"watch", "--summary=@DIR", "--", "true"}, {"--summary", "director"}},
    {{"watch", "--plot=@MISSING", "--", "true"}, {"--plot", "ENOENT"}},
    {{"watch", "--out", "", "--", "true"}, {"--out", "empty"}},
    {{"watch", "--summary", "", "--", "true"}, {"--summary", "empty"}},
    {{"watch", "--plot", "", "--", "true"}, {"--plot", "empty"}},
    {{"watch", "--pid=1", "--", "true"}, {"not both"}},
    {{"watch", "--", ""}, {"COMMAND", "empty", "program name"}},
    // ---- maps ----
    {{"maps"}, {"--pid"}},
    {{"maps", "--pid=", "--json"}, {"--pid", "empty", "Process id"}},
    {{"maps", "--pid", ""}, {"--pid", "accepted"}},
    {{"maps", "--pid=abc"}, {"--pid", "accepted"}},
    {{"maps", "--pid=-1"}, {"--pid", "accepted"}},
    {{"maps", "--pid=0"}, {"--pid", "accepted"}},
    {{"maps", "--pid=" + kLong}, {"--pid", "accepted"}},
    {{"maps", "--pid=@SELF", "--match=perms=rwxq"}, {"--match", "accepted"}},
    {{"maps", "--pid=@SELF", "--match=", "--json"}, {"--match", "empty", "SPEC"}},
    {{"maps", "--pid=@SELF", "--match", ""}, {"--match", "accepted"}},
    {{"maps", "--pid=@SELF", "--match=" + kNonUtf8}, {"--match", "accepted"}},
    // ---- va2pa ----
    {{"va2pa", "--pid=@SELF"}, {"ADDR"}},
    {{"va2pa", "--pid=x", "0x1000"}, {"--pid", "accepted"}},
    {{"va2pa", "--pid=@SELF", "0xzz"}, {"address", "accepted"}},
    {{"va2pa", "--pid=@SELF", ""}, {"address", "accepted"}},
    {{"va2pa", "--pid=@SELF", "0x10000000000000000"}, {"address", "accepted"}},
    {{"va2pa", "--pid=@SELF", "--ram-map=junk", "0x1000"}, {"--ram-map", "accepted"}},
    // ---- peek ----
    {{"peek", "0x1000"}, {"--pid", "--file"}},
    {{"peek", "--pid=@SELF", "--width=3", "0x1000"}, {"--width", "accepted"}},
    {{"peek", "--pid=@SELF", "--match=size=4Q", "0x1000"}, {"--match", "accepted"}},
    {{"peek", "--pid=@SELF", "-1"}, {"address", "accepted"}},
    {{"peek", "--file=@FILE", "--ram-map=0:0", "0x1000"}, {"--ram-map", "accepted"}},
    {{"peek", "--file=@FILE", "12Q"}, {"offset", "accepted"}},
    {{"peek", "--file=@FILE", "--pid=@SELF", "0"}, {"--pid", "--file"}},
    {{"peek", "--pid=@SELF", "--ram-map=0:0:4K", "0"}, {"--ram-map", "--file"}},
    {{"peek", "--file=@DIR", "0"}, {"--file", "not a regular file", "accepted"}},
    {{"peek", "--file=@FIFO", "0"}, {"--file", "not a regular file", "accepted"}},
    {{"peek", "--file=/dev/zero", "0"}, {"--file", "not a regular file", "accepted"}},
    {{"peek", "--file=", "0"}, {"--file", "empty"}},
    {{"peek", "--file", "", "0"}, {"--file", "empty", "accepted"}},
    {{"poke", "--file", "", "0", "1"}, {"--file", "empty", "accepted"}},
    // ---- poke ----
    {{"poke", "--pid=@SELF", "0x1000"}, {"VALUE"}},
    {{"poke", "--pid=@SELF", "0x1000", "0x1g"}, {"value", "accepted"}},
    {{"poke", "--pid=@SELF", "--width=1", "0x1000", "256"}, {"value", "accepted"}},
    {{"poke", "--pid=@SELF", "0x1000", "-1"}, {"value", "accepted"}},
    {{"poke", "--pid=@SELF", "--expect=zz", "0x1000", "1"}, {"--expect", "accepted"}},
    {{"poke", "--pid=@SELF", "--width=16", "0x1000", "1"}, {"--width", "accepted"}},
    {{"poke", "--pid=abc", "0x1000", "1"}, {"--pid", "accepted"}},
    {{"poke", "--file=@DIR", "0", "1"}, {"--file", "EISDIR", "accepted"}},
    {{"poke", "--file=@FIFO", "0", "1"}, {"--file", "not a regular file", "accepted"}},
    {{"poke", "--pid=@SELF", "--audit=@DIR", "0x1000", "1"}, {"--audit", "EISDIR", "accepted"}},
    {{"poke", "--pid=@SELF", "--audit=@MISSING", "0x1000", "1"}, {"--audit", "ENOENT", "accepted"}},
    {{"poke", "--pid=@SELF", "--audit", "", "0x1000", "1"}, {"--audit", "empty"}},
    // ---- poll ----
    {{"poll", "--match=size=4K", "--offset=0", "--when===0", "--set=1"}, {"--comm", "--pid"}},
    {{"poll", "--pid=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1"}, {"--pid", "accepted"}},
    {{"poll", "--comm=x", "--match=", "--offset=0", "--when===0", "--set=1"}, {"--match", "empty", "SPEC"}},
    {{"poll", "--comm=x", "--match", "", "--offset=0", "--when===0", "--set=1"}, {"--match", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=-1", "--when===0", "--set=1"}, {"--offset", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=" + kLong, "--when===0", "--set=1"}, {"--offset", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--width=5", "--when===0", "--set=1"}, {"--width", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when", "", "--set=1"}, {"--when", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when=", "--set=1"}, {"--when", "empty", "OP VALUE"}},
    {{"peek", "--pid=@SELF", "--width=", "0x1000"}, {"--width", "empty", "1, 2, 4 or 8"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when=~0", "--set=1"}, {"--when", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set", ""}, {"--set", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--width=1", "--when===0", "--set=999"}, {"--set", "accepted"}},
    {{"poll", "--cmdline=(", "--match=size=4K", "--offset=0", "--when===0", "--set=1"}, {"--cmdline", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--period=0"}, {"--period", "1ms to 1h"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--period=nan"}, {"--period", "1ms to 1h"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--duration=-3"}, {"--duration", "1ms to 8784h"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--max-writes=0"}, {"--max-writes", "count of writes"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--max-writes=-1"}, {"--max-writes", "count of writes"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--max-writes=99999999999999999999"}, {"--max-writes", "count of writes"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--audit=@DIR"}, {"--audit", "EISDIR"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--audit=@MISSING"}, {"--audit", "ENOENT"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--audit", ""}, {"--audit", "empty"}},
    // ---- probe: measurement, memory types, JUnit ----
    {{"probe", "--measure-size=5"}, {"--measure-size", "multiple of 4096 from 1048576"}},
    {{"probe", "--measure-size=abc"}, {"--measure-size", "multiple of 4096"}},
    {{"probe", "--measure-size=" + kLong}, {"--measure-size", "multiple of 4096"}},
    {{"probe", "--measure-repeats=0"}, {"--measure-repeats", "1 to 100"}},
    {{"probe", "--measure-repeats=101"}, {"--measure-repeats", "1 to 100"}},
    {{"probe", "--measure-repeats=ten"}, {"--measure-repeats", "1 to 100"}},
    {{"probe", "--jobs=65"}, {"--jobs", "from 1 to 64"}},
    {{"probe", "--jobs=-1"}, {"--jobs", "from 1 to 64"}},
    {{"probe", "--jobs=two"}, {"--jobs", "from 1 to 64"}},
    {{"probe", "--isolate=process"}, {"--isolate", "route", "none"}},
    {{"probe", "--gl-driver=swrast"}, {"--gl-driver", "\"swrast\"", "auto", "system", "zink", "llvmpipe"}},
    {{"probe", "--gl-driver="}, {"--gl-driver", "auto", "llvmpipe"}},
    {{"probe", "--fd-transport=foo"}, {"--fd-transport", "\"foo\"", "scm", "pidfd", "both"}},
    {{"probe", "--fd-transport=SCM"}, {"--fd-transport", "\"SCM\"", "scm", "pidfd", "both"}},
    {{"probe", "--fd-transport="}, {"--fd-transport", "empty", "accepted: scm, pidfd, both"}},
    {{"probe", "--expect-transport=udp"}, {"--expect-transport", "\"udp\"", "shm", "posix", "sysv", "cma", "tcp"}},
    {{"probe", "--expect-transport=TCP"}, {"--expect-transport", "\"TCP\"", "shm", "tcp"}},
    {{"probe", "--expect-transport="}, {"--expect-transport", "empty", "shm"}},
    {{"probe", "--list-routes=yaml"}, {"--list-routes", "json, markdown, faults or row-pattern"}},
    // The table's other options are checked as a run's are.
    {{"probe", "--list-routes=json", "--fd-transport=bogus"}, {"--fd-transport", "\"bogus\"", "scm", "pidfd", "both"}},
    {{"probe", "--list-routes=json", "--only=nonexist"}, {"--only", "unknown row \"nonexist\""}},
    {{"probe", "--list-routes", "--only=nonexist"}, {"--only", "unknown row \"nonexist\""}},
    // A run's printed name pasted into --only: the plain row, and the option that gives the run.
    {{"probe", "--only=T1-opaque-fd@pidfd"}, {"--only", "\"T1-opaque-fd@pidfd\"", "--only=T1-opaque-fd", "--fd-transport=pidfd or both"}},
    {{"probe", "--only=T1-opaque-fd@mt0"}, {"--only", "--only=T1-opaque-fd", "--memory-type=INDEX or all"}},
    {{"probe", "--only=T4-image-opaque-fd@linear@pidfd"}, {"--only", "row \"T4-image-opaque-fd@linear\"", "--fd-transport=pidfd or both"}},
    {{"probe", "--only=T1-opaque-fd@bogus"}, {"--only", "unknown row \"T1-opaque-fd@bogus\""}},
    {{"probe", "--only=T1-opaque-fd@mt0@pidfd"}, {"--only", "--memory-type=INDEX or all", "--fd-transport=pidfd or both"}},
    // A selection that can select no row.
    {{"probe", "--only-t3", "--only=T1-opaque-fd"}, {"--only", "selects no row", "accepted"}},
    {{"probe", "--no-gles", "--only=T1-gles-memobj-fd-same-proc"}, {"--only", "selects no row", "accepted"}},
    {{"probe", "--memory-type=foo"}, {"--memory-type", "auto, all"}},
    {{"probe", "--memory-type=99"}, {"--memory-type", "HOST_VISIBLE memory type"}},
    {{"probe", "--memory-type="}, {"--memory-type", "empty"}},
    {{"probe", "--junit="}, {"--junit", "empty"}},
    {{"probe", "--junit", ""}, {"--junit", "empty"}},
    {{"probe", "--junit=@MISSING"}, {"--junit", "ENOENT", "writable directory"}},
    {{"probe", "--junit=@DIR"}, {"--junit"}},
    // ---- report ----
    {{"report"}, {"files"}},
    {{"report", "@MISSING"}, {"@MISSING", "ENOENT"}},
    {{"report", "@DIR"}, {"@DIR"}},
    {{"report", "@FILE"}, {"@FILE", "not JSON"}},
    {{"report", "@FILE", "--html="}, {"--html", "empty"}},
    {{"report", "@FILE", "--markdown="}, {"--markdown", "empty"}},
    // Inputs are bounded and must be files with an end; an output is never an input.
    {{"report", "/dev/zero"}, {"/dev/zero", "more than 67108864 bytes"}},
    {{"report", "@FILE", "--expect=@DIR"}, {"--expect", "@DIR", "EISDIR"}},
    {{"report", "@FILE", "--expect=/dev/zero"}, {"--expect", "more than 1048576 bytes"}},
    {{"report", "@FILE", "--markdown=@FILE"}, {"--markdown", "is also an input", "another file"}},
    {{"probe", "--expect=@DIR"}, {"--expect", "@DIR", "EISDIR"}},
    // ---- scan ----
    {{"scan"}, {"FILE or --pid"}},
    {{"scan", "@FILE", "--hex=zz"}, {"--hex", "hexadecimal digit", "accepted"}},
    {{"scan", "@FILE", "--hex="}, {"--hex", "empty"}},
    {{"scan", "@FILE", "--u32=0x1ffffffff"}, {"--u32", "4-byte", "accepted"}},
    {{"scan", "@FILE", "--record=garbage"}, {"--record", "accepted"}},
    {{"scan", "@FILE", "--hex=41", "--max=-1"}, {"--max", "accepted"}},
    {{"scan", "@FILE", "--hex=41", "--ram-map=0:0:4M,0x1000:0:4K"}, {"--ram-map", "overlaps", "accepted"}},
    {{"scan", "@FILE", "--hex=41", "--ram-map=" + kLong}, {"--ram-map", "accepted"}},
    // ---- walk ----
    {{"walk"}, {"--image"}},
    {{"walk", "--image=@FILE", "--ram-map=0:0:4K", "--root=0", "--format=nope", "0x1000"}, {"--format", "x86-64, x86-64-la57, gmmu"}},
    {{"walk", "--image=@FILE", "--ram-map=0:0:4K", "--root=zz", "--format=x86-64", "0x1000"}, {"--root", "accepted"}},
    // One address grammar: no size suffix on an address, decimal only with 0n.
    {{"walk", "--image=@FILE", "--root=0x1863c000K", "--format=x86-64", "0x1000"}, {"--root", "'K'", "no K/M/G"}},
    {{"walk", "--image=@FILE", "--root=0n12a", "--format=x86-64", "0x1000"}, {"--root", "0n for decimal"}},
    {{"walk", "--image=@FILE", "--root=0x1000", "--format=x86-64", "4G"}, {"virtual address", "no K/M/G"}},
    {{"peek", "--file=@FILE", "4K"}, {"offset", "0n for decimal"}},
    {{"peek", "--file=@FILE", "--ram-map=4G:0:4K", "0"}, {"--ram-map", "GPA", "no K/M/G"}},
    {{"poke", "--file=@FILE", "0n", "1"}, {"offset", "decimal digits"}},
    // ---- scan --entropy / --twins ----
    {{"scan", "@FILE", "--entropy=5.5"}, {"--entropy", "cannot be reached", "BITS[/BLOCK]"}},
    {{"scan", "@FILE", "--entropy=4/3"}, {"--entropy", "8 to 64K", "accepted"}},
    {{"scan", "@FILE", "--entropy=x"}, {"--entropy", "expected a number", "accepted"}},
    {{"scan", "@FILE", "--entropy="}, {"--entropy", "empty"}},
    {{"scan", "--pid=@SELF", "--twins", "--ram-map=0:0:4K"}, {"--ram-map", "FILE"}},
    {{"scan", "@FILE", "--twins", "--hex=41"}, {"exactly one of", "--twins"}},
    {{"scan", "@FILE", "--twins", "--block=100"}, {"--block", "\"100\" is not accepted", "power of two from 64 to 1G"}},
    {{"scan", "@FILE", "--hex=41", "--page-offset=0", "--page-size=3K"}, {"--page-size", "\"3K\" is not accepted", "power of two"}},
    {{"scan", "@FILE", "--hex=41", "--page-size=2M"}, {"--page-size", "goes with --page-offset"}},
    {{"scan", "@FILE", "--twins", "--page-size=2M"}, {"--page-size", "--twins"}},
    {{"scan", "@FILE", "--twins", "--block=32"}, {"--block", "power of two from 64 to 1G"}},
    {{"scan", "@FILE", "--hex=41", "--block=4K"}, {"--block", "--twins"}},
    {{"scan", "@FILE", "--twins", "--page-offset=0"}, {"--page-offset", "--twins"}},
    {{"scan", "@FILE", "--twins", "--max=x"}, {"--max", "accepted"}},
    // ---- diff ----
    {{"diff"}, {"--pid", "--file"}},
    {{"diff", "--pid=@SELF", "--file=@FILE"}, {"--pid", "--file"}},
    {{"diff", "--pid=abc"}, {"--pid", "accepted"}},
    {{"diff", "--pid=@SELF", "--match=size=4Q"}, {"--match", "accepted"}},
    {{"diff", "--pid=@SELF", "--range=0:4K"}, {"--range", "--file"}},
    {{"diff", "--file", ""}, {"--file", "empty", "accepted"}},
    {{"diff", "--file=@FILE", "--match=size=4K"}, {"--match", "--pid"}},
    {{"diff", "--file=@FILE", "--range=1000"}, {"--range", "ADDR:SIZE"}},
    {{"diff", "--file=@FILE", "--range=1000:0"}, {"--range", "size is 0"}},
    {{"diff", "--file=@FILE", "--range=zz:4K"}, {"--range", "hexadecimal digits", "ADDR:SIZE"}},
    {{"diff", "--file=@FILE", "--range=0:4Q"}, {"--range", "ADDR:SIZE"}},
    {{"diff", "--file=@FILE", "--range="}, {"--range", "empty"}},
    {{"diff", "--file=@FILE", "--ram-map=0:0"}, {"--ram-map", "accepted"}},
    {{"diff", "--file=@FILE", "--width=3"}, {"--width", "1, 2, 4 or 8"}},
    {{"diff", "--file=@FILE", "--interval=5x"}, {"--interval", "from 1ms to 1h"}},
    {{"diff", "--file=@FILE", "--rounds=0"}, {"--rounds", "\"0\" is not accepted", "from 1 to"}},
    {{"diff", "--pid=@SELF", "--"}, {"no command after --", "accepted"}},
    {{"diff", "--file=@FILE", "--interval=1s", "--interval=2s"}, {"--interval", "given 2 times", "accepted: once"}},
    {{"diff", "--file=@FILE", "--interval=0ms"}, {"--interval", "from 1ms to 1h"}},
    {{"diff", "--file=@FILE", "--interval=2h"}, {"--interval", "from 1ms to 1h"}},
    {{"diff", "--file=@FILE", "--interval=soon"}, {"--interval", "from 1ms to 1h"}},
    {{"diff", "--file=@FILE", "--rounds=3"}, {"--rounds", "--watch"}},
    {{"diff", "--file=@FILE", "--watch", "--rounds=0"}, {"--rounds", "from 1"}},
    {{"diff", "--file=@FILE", "--max-pages=0"}, {"--max-pages", "from 1"}},
    {{"diff", "--file=@FILE", "--max-words=99999"}, {"--max-words", "1 to 1024"}},
    {{"diff", "--file=@FILE", "--max-bytes=0"}, {"--max-bytes", "greater than 0"}},
    {{"diff", "--file=@FILE", "--max-bytes=1Q"}, {"--max-bytes", "accepted"}},
    {{"diff", "--file=@FILE", "--interval=1s", "--", "true"}, {"--interval", "COMMAND"}},
    {{"diff", "--file=@FILE", "--watch", "--", "true"}, {"--watch", "COMMAND"}},
    {{"diff", "--file=@FILE"}, {"nothing to compare"}},
    {{"diff", "--file=@DIR"}, {"--file", "not a regular file", "accepted"}},
    {{"diff", "--file=@FIFO"}, {"--file", "not a regular file", "accepted"}},
    // ---- poll --max-processes / --all ----
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--max-processes=0"}, {"--max-processes", "from 1", "--all"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--max-processes=x"}, {"--max-processes", "accepted"}},
    {{"poll", "--comm=x", "--match=size=4K", "--offset=0", "--when===0", "--set=1", "--max-processes=2", "--all"}, {"--all", "--max-processes"}},
    // ---- watch --until ----
    {{"watch", "--until=forever", "--", "true"}, {"--until", "command", "tree"}},
    {{"watch", "--until=tree", "--pid=@SELF"}, {"--until=tree", "COMMAND"}},
    {{"walk", "--image=@FILE", "--ram-map=0:0:4K", "--root=0", "--format=@FILE", "0x1000"}, {"--format"}},
    {{"walk", "--image=@FILE", "--ram-map=0:0:4K", "--root=0", "--format=@DIR", "0x1000"}, {"--format", "EISDIR"}},
    {{"walk", "--image=@FILE", "--ram-map=0:0:4K", "--root=0", "--format=/dev/zero", "0x1000"}, {"--format", "more than 1048576 bytes"}},
    // An image is read at offsets: a FIFO or character device is refused, never waited on.
    {{"walk", "--image=@FIFO", "--root=0", "--format=x86-64", "0x1000"}, {"@FIFO", "not a regular file or block device"}},
    {{"scan", "@FIFO", "--hex=41"}, {"@FIFO", "not a regular file or block device"}},
    {{"scan", "@FIFO", "--twins"}, {"@FIFO", "not a regular file or block device"}},
    {{"diff", "--file=@FIFO", "--range=0:4K", "--", "true"}, {"@FIFO", "not a regular file or block device"}},
    // ---- threads ----
    {{"threads"}, {"--pid", "--tracers"}},
    {{"threads", "--pid=abc"}, {"--pid", "accepted"}},
    {{"threads", "--pid=0"}, {"--pid", "accepted"}},
    {{"threads", "--cmdline=("}, {"--cmdline", "accepted"}},
    {{"threads", "--pid=@SELF", "--sample=5x"}, {"--sample", "\"5x\" is not accepted", "250ms"}},
    {{"threads", "--pid=@SELF", "--sample=-1s"}, {"--sample", "accepted"}},
    {{"threads", "--pid=@SELF", "--sample="}, {"--sample", "empty", "250ms"}},
    {{"threads", "--pid=@SELF", "--sample=" + kLong}, {"--sample", "accepted"}},
    {{"threads", "--pid=@SELF", "--period=0"}, {"--period", "from 0.1ms to 1h"}},
    {{"threads", "--pid=@SELF", "--period=0.05ms"}, {"--period", "from 0.1ms to 1h"}},
    {{"threads", "--pid=@SELF", "--sample=1s", "--period=2s"}, {"--period", "no longer than --sample"}},
    {{"threads", "--pid=@SELF", "--sample=1000h", "--period=1ms"}, {"--sample/--period", "10000000 readings"}},
    {{"threads", "--pid=@SELF", "--top=0"}, {"--top", "1 to 1000"}},
    {{"threads", "--pid=@SELF", "--max-threads=-1"}, {"--max-threads", "1 to 100000"}},
    {{"threads", "--pid=@SELF", "--ioctl-names=@MISSING"}, {"--ioctl-names", "ENOENT", "accepted"}},
    {{"threads", "--pid=@SELF", "--ioctl-names=@DIR"}, {"--ioctl-names", "not a regular file", "accepted"}},
    {{"threads", "--pid=@SELF", "--ioctl-names=@FIFO"}, {"--ioctl-names", "not a regular file", "accepted"}},
    {{"threads", "--pid=@SELF", "--ioctl-names=/dev/zero"}, {"--ioctl-names", "not a regular file", "accepted"}},
    {{"threads", "--tracers", "--pid=1"}, {"--tracers", "--expect-none"}},
    {{"threads", "--pid=@SELF", "--expect-none"}, {"--expect-none", "--tracers"}},
    // ---- fds ----
    {{"fds"}, {"--pid"}},
    {{"fds", "--pid=x"}, {"--pid", "accepted"}},
    {{"fds", "--pid=@SELF", "--period=1x"}, {"--period", "accepted"}},
    {{"fds", "--pid=@SELF", "--period=0.01ms"}, {"--period", "from 0.1ms to 1h"}},
    {{"fds", "--pid=@SELF", "--duration=0"}, {"--duration", "accepted"}},
    {{"fds", "--pid=@SELF", "--duration="}, {"--duration", "empty", "10s"}},
    {{"fds", "--pid=@SELF", "--period=2s", "--duration=1s"}, {"--period", "no longer than the duration"}},
    {{"fds", "--pid=@SELF", "--max-paths=0"}, {"--max-paths", "1 to 100000"}},
    // ---- top level ----
    {{}, {"subcommand"}},
    {{"nosuchcommand"}, {"nosuchcommand", "probe, "}},
    {{""}, {"unknown subcommand", "probe, "}},
};
// clang-format on

std::string show(const std::vector<std::string>& args) {
  std::string s = "extmem";
  for (const std::string& a : args) s += " '" + (a.size() > 60 ? a.substr(0, 60) + "...(" + std::to_string(a.size()) + " bytes)" : a) + "'";
  return s;
}

// Every row: exit 2, nothing on stdout, stderr names the option and what is accepted, no hang, no signal.
TEST_F(CliBadInput, EveryRowExitsTwoNamingOptionAndAccepted) {
  for (const Case& c : kCases) {
    std::vector<std::string> args;
    for (const std::string& a : c.args) args.push_back(expand(a));
    const Output o = run_extmem(args, dir_);
    SCOPED_TRACE(show(args) + "\nstdout:\n" + o.out + "\nstderr:\n" + o.err);
    EXPECT_FALSE(o.timed_out);
    EXPECT_EQ(o.signal, 0);
    EXPECT_EQ(o.code, 2);
    EXPECT_EQ(o.out, "");
    for (const std::string& e : c.expect) EXPECT_NE(o.err.find(expand(e)), std::string::npos) << "missing: " << expand(e);
  }
}

// An output that cannot be written at the end of the run (/dev/full: ENOSPC) is
// not a success: the watch said so on stderr but exited 0 with the command.
// A private copy of /dev/full (mknod) so that a regression cannot replace the real one.
TEST_F(CliBadInput, WatchOutputWriteFailureIsNotSuccess) {
  const fs::path full = dir_ / "full";
  if (::mknod(full.c_str(), S_IFCHR | 0666, ::makedev(1, 7)) != 0) GTEST_SKIP() << "mknod: " << std::strerror(errno);
  for (const std::string option : {"--summary=", "--plot="}) {
    const Output o = run_extmem({"watch", option + full.string(), "--", "true"}, dir_);
    EXPECT_EQ(o.code, 1) << option << "\n" << o.err;
    EXPECT_NE(o.err.find("ENOSPC"), std::string::npos) << o.err;
  }
}

// A zombie (exited, not reaped) has a /proc entry but no memory: every process
// tool says the process has exited (exit 5, or 2 for watch's --pid) instead of
// "0 mappings" or "not mapped".
TEST_F(CliBadInput, ZombiePidIsAnExitedProcess) {
  const std::string z = "--pid=" + std::to_string(zombie_);
  const std::vector<std::vector<std::string>> five = {
      {"maps", z}, {"maps", z, "--pagemap"}, {"va2pa", z, "0x1000"}, {"peek", z, "0x1000"}, {"poke", z, "0x1000", "1"}, {"scan", z, "--hex=41"}};
  for (const auto& args : five) {
    const Output o = run_extmem(args, dir_);
    SCOPED_TRACE(show(args) + "\nstdout:\n" + o.out + "\nstderr:\n" + o.err);
    EXPECT_EQ(o.code, 5);
    EXPECT_NE(o.err.find("ESRCH"), std::string::npos);
    EXPECT_EQ(o.out, "");
  }
  const Output w = run_extmem({"watch", z}, dir_);
  EXPECT_EQ(w.code, 2) << w.err;
  EXPECT_NE(w.err.find("zombie"), std::string::npos) << w.err;
}

// What does not exist is exit 5 (the exit-code table) for diff, peek and poke as
// for scan: a missing --file, a COMMAND after -- that is not there.
TEST_F(CliBadInput, DiffOfAMissingFileOrCommandIsExitFive) {
  const std::string missing = (dir_ / "missing" / "x").string();
  for (std::vector<std::string> argv : {std::vector<std::string>{"diff", "--file=" + missing},
                                        {"peek", "--file=" + missing, "0"},
                                        {"poke", "--file=" + missing, "0", "1"}}) {
    const Output f = run_extmem(argv, dir_);
    EXPECT_EQ(f.code, 5) << argv[0] << ": " << f.err;
    EXPECT_NE(f.err.find("ENOENT"), std::string::npos) << f.err;
    EXPECT_NE(f.err.find("accepted"), std::string::npos) << f.err;
    EXPECT_TRUE(f.out.empty()) << f.out;
  }
  const Output s = run_extmem({"scan", missing, "--hex=41"}, dir_);
  EXPECT_EQ(s.code, 5) << s.err;
  // A file of one page (the empty fixture holds no word to compare).
  std::ofstream(dir_ / "words", std::ios::binary) << std::string(4096, '\0');
  const Output c = run_extmem({"diff", "--file=" + (dir_ / "words").string(), "--", missing}, dir_);
  EXPECT_EQ(c.code, 5) << c.err;
  EXPECT_NE(c.err.find("could not start"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("ENOENT"), std::string::npos) << c.err;
}

}  // namespace
