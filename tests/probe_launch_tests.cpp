// Launch without a shell (docs/probe.md, "Launch without a shell"): the
// args-file splitter in-process, then the real binary on the machine's Vulkan
// driver (lavapipe on the embedded default) with --args-file, marker mode,
// --output and --verdict-file: the same rows as the command line, refusals of
// bad files naming the file (and line), no file created by a refused run, a
// verdict file that a SIGKILL never leaves half-written, and an --output file
// that holds what stdout would.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/args_file.h"
#include "cli/probe_option_text.h"
#include "extmem/probe/probe.h"
#include "support/temp_files.h"

namespace {

namespace fs = std::filesystem;
using extmem::test::slurp;
using extmem::test::TempDir;

// ---- the splitter (no GPU) ----

std::vector<std::pair<std::string, unsigned>> split(const std::string& text) {
  auto words = extmem::cli::split_args_text(text, "F");
  std::vector<std::pair<std::string, unsigned>> out;
  if (!words) {
    ADD_FAILURE() << words.error().detail;
    return out;
  }
  for (const auto& w : *words) out.emplace_back(w.text, w.line);
  return out;
}

std::string refusal(const std::string& text) {
  auto words = extmem::cli::split_args_text(text, "F");
  return words ? std::string("(accepted)") : words.error().detail;
}

// Blanks separate words; quotes and backslashes keep blanks inside one; each word knows its line.
TEST(ArgsFile, SplitsShellLikeWordsWithLines) {
  using W = std::vector<std::pair<std::string, unsigned>>;
  EXPECT_EQ(split("--only=T1-opaque-fd  --size 65536\n\t--device='AMD Radeon'\n"),
            (W{{"--only=T1-opaque-fd", 1}, {"--size", 1}, {"65536", 1}, {"--device=AMD Radeon", 2}}));
  EXPECT_EQ(split("\"--json=/a b/\\\"q\\\\.json\"\n--x=a\\ b"), (W{{"--json=/a b/\"q\\.json", 1}, {"--x=a b", 2}}));
  EXPECT_EQ(split("'it''s'"), (W{{"its", 1}}));
  EXPECT_EQ(split("--a=''"), (W{{"--a=", 1}}));
}

// A '#' that begins a word starts a comment; inside a word it is a character.
TEST(ArgsFile, CommentsOnlyAtTheStartOfAWord) {
  using W = std::vector<std::pair<std::string, unsigned>>;
  EXPECT_EQ(split("# a comment --size=1\n--only=a#b # tail\n  #x\n--measure"),
            (W{{"--only=a#b", 2}, {"--measure", 4}}));
}

// Windows line ends are tolerated; an empty file or one of comments gives no words.
TEST(ArgsFile, CrlfAndEmptyFiles) {
  using W = std::vector<std::pair<std::string, unsigned>>;
  EXPECT_EQ(split("--a\r\n--b\r\n"), (W{{"--a", 1}, {"--b", 2}}));
  EXPECT_TRUE(split("").empty());
  EXPECT_TRUE(split("# nothing\n\n   \n").empty());
}

// A quote left open, a trailing backslash, a NUL or a stray CR is refused, naming the line.
TEST(ArgsFile, RefusalsNameTheLine) {
  EXPECT_EQ(refusal("--a\n--device='x\n"), "F:2: the ' quote is not closed on this line");
  EXPECT_EQ(refusal("--device=\"x"), "F:1: the \" quote is not closed on this line");
  EXPECT_EQ(refusal("--a\n\n--b \\\n--c"), "F:3: a '\\' at the end of the line (there are no continuation lines)");
  EXPECT_EQ(refusal(std::string("--a\n--b\0", 8)), "F:2: a NUL byte (not a text file)");
  EXPECT_EQ(refusal("--a\r--b"), "F:1: a carriage return inside a line");
}

// Missing, a directory, a file whose read fails, too large: an os error naming path and errno, or too large.
TEST(ArgsFile, ReadRefusesBadFiles) {
  TempDir dir;
  struct Case {
    std::string path, code, text;
  };
  for (const Case& c : {Case{dir.file("none"), "ENOENT (2)", "No such file or directory"},
                        Case{dir.path.string(), "EISDIR (21)", "Is a directory"},
                        Case{"/proc/self/mem", "EIO (5)", "Input/output error"}}) {
    SCOPED_TRACE(c.path);
    auto r = extmem::cli::read_args_file(c.path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, extmem::ErrorKind::os);
    EXPECT_EQ(r.error().code, c.code);
    EXPECT_EQ(r.error().detail, "cannot read " + c.path + ": " + c.text);
  }
  std::ofstream(dir.file("big")) << std::string(extmem::cli::kArgsFileMaxBytes + 1, ' ');
  auto big = extmem::cli::read_args_file(dir.file("big"));
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().detail.find("larger than 65536 bytes"), std::string::npos) << big.error().detail;
  std::ofstream(dir.file("ok")) << std::string(extmem::cli::kArgsFileMaxBytes - 9, ' ') << "--measure";
  auto ok = extmem::cli::read_args_file(dir.file("ok"));
  ASSERT_TRUE(ok) << ok.error().detail;
  EXPECT_EQ(ok->size(), 1u);
}

// The command's grammar reads --timeout and --soak into std::chrono durations; validate() refuses what a library
// caller sets out of bounds in the same words; the new paths may not be empty.
TEST(ProbeOptionsLaunch, DurationsAndPathsReadIntoTheTypedRecord) {
  extmem::probe::ProbeOptions o;
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--timeout", "250ms"));
  EXPECT_EQ(o.timeout, std::chrono::milliseconds(250));
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--timeout", "2m"));
  EXPECT_EQ(o.timeout, std::chrono::minutes(2));
  ASSERT_TRUE(extmem::cli::parse_probe_option(o, "--soak", "0"));
  EXPECT_EQ(o.soak, std::chrono::nanoseconds(0));
  EXPECT_FALSE(extmem::cli::parse_probe_option(o, "--timeout", "1e3"));
  EXPECT_FALSE(extmem::cli::parse_probe_option(o, "--output", ""));
  EXPECT_FALSE(extmem::cli::parse_probe_option(o, "--verdict-file", ""));
  using std::chrono::milliseconds;
  for (milliseconds bad : {milliseconds(0), milliseconds(-1000), milliseconds(3600500)}) {
    extmem::probe::ProbeOptions v;
    v.timeout = bad;
    auto r = extmem::probe::validate(v);
    ASSERT_FALSE(r) << bad.count();
    EXPECT_EQ(r.error().step, "--timeout");
    EXPECT_NE(r.error().detail.find(extmem::describe_duration(extmem::probe::kTimeoutRange)), std::string::npos)
        << r.error().detail;
  }
}

// ---- the real binary ----

double now_s() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// A started `extmem probe ARGS...` in its own process group, stdout and stderr into files.
struct Started {
  pid_t pid = -1;
  std::string out_path, err_path;
};

Started start_probe(const TempDir& dir, const std::vector<std::string>& args, const std::string& fault = {},
                    const std::string& tag = "run") {
  Started s;
  s.out_path = dir.file(tag + ".stdout");
  s.err_path = dir.file(tag + ".stderr");
  std::vector<std::string> argv = {EXTMEM_BINARY, "probe"};
  argv.insert(argv.end(), args.begin(), args.end());
  s.pid = ::fork();
  if (s.pid == 0) {
    ::setpgid(0, 0);
    const int out = ::open(s.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(s.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (fault.empty()) ::unsetenv("EXTMEM_TEST_FAULT");
    else ::setenv("EXTMEM_TEST_FAULT", fault.c_str(), 1);
    std::vector<char*> a;
    for (std::string& w : argv) a.push_back(w.data());
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  if (s.pid > 0) ::setpgid(s.pid, s.pid);
  return s;
}

struct Finished {
  int code = -1;  // exit status; -1 when killed or past the limit
  std::string out, err;
};

// Waits up to `limit_s` for the probe, then kills its whole group either way (no worker outlives a test).
Finished finish(const Started& s, double limit_s = 120) {
  Finished f;
  int status = 0;
  const double deadline = now_s() + limit_s;
  pid_t got = 0;
  while ((got = ::waitpid(s.pid, &status, WNOHANG)) == 0 && now_s() < deadline) ::usleep(20 * 1000);
  if (got == 0) {
    ADD_FAILURE() << "the probe ran past " << limit_s << " s";
    ::kill(-s.pid, SIGKILL);
    ::waitpid(s.pid, &status, 0);
  }
  ::kill(-s.pid, SIGKILL);
  if (got == s.pid && WIFEXITED(status)) f.code = WEXITSTATUS(status);
  f.out = slurp(s.out_path);
  f.err = slurp(s.err_path);
  return f;
}

Finished probe(const TempDir& dir, const std::vector<std::string>& args, const std::string& tag = "run") {
  return finish(start_probe(dir, args, {}, tag));
}

std::string describe(const Finished& f) { return "exit " + std::to_string(f.code) + "\nstdout:\n" + f.out + "\nstderr:\n" + f.err; }

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// "RESULT <row> <STATUS> <trace> [why: ...]" of every row, in print order, without the detail after " | ".
std::vector<std::string> result_rows(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("RESULT ", 0) == 0) rows.push_back(line.substr(0, line.find(" | ")));
  return rows;
}

// Two quick rows, one exporting Vulkan memory, one plain memfd: both OK on lavapipe.
const std::string kTwoRows = "--only=T1-opaque-fd,T3-memfd-cross-process";

// The same options from a file (split over lines, with comments and quotes) give the same rows and exit code.
TEST(ProbeLaunch, ArgsFileGivesTheSameRowsAsTheCommandLine) {
  TempDir dir;
  Finished direct = probe(dir, {kTwoRows, "--timeout=30s", "--size", "65536"}, "direct");
  ASSERT_EQ(direct.code, 0) << describe(direct);
  write(dir.file("a.args"), "# the two quick rows\n'" + kTwoRows + "'\n--timeout=30s   # per route\n--size 65536\n");
  Finished from_file = probe(dir, {"--args-file=" + dir.file("a.args")}, "file");
  EXPECT_EQ(from_file.code, direct.code) << describe(from_file);
  EXPECT_EQ(result_rows(from_file.out), result_rows(direct.out)) << describe(from_file);
  // Every row is printed (those --only leaves out as SKIP); the two selected ones ran and are OK.
  std::vector<std::string> ran;
  for (const std::string& r : result_rows(direct.out))
    if (r.find(" SKIP ") == std::string::npos) ran.push_back(r.substr(0, r.find(' ', 7)));
  EXPECT_EQ(ran, (std::vector<std::string>{"RESULT T1-opaque-fd", "RESULT T3-memfd-cross-process"})) << direct.out;
  EXPECT_NE(from_file.out.find("timeout=30 s"), std::string::npos) << from_file.out;
}

// A value on the command line replaces the file's, which is then never read (a bad one included);
// the companion run shows the same file alone is refused at its line.
TEST(ProbeLaunch, CommandLineWinsOverTheFile) {
  TempDir dir;
  write(dir.file("a.args"), "--list-devices\n--timeout=forever\n");
  Finished alone = probe(dir, {"--args-file=" + dir.file("a.args")}, "alone");
  EXPECT_EQ(alone.code, 2) << describe(alone);
  EXPECT_NE(alone.err.find(dir.file("a.args") + ":2: --timeout: \"forever\" is not accepted"), std::string::npos)
      << alone.err;
  Finished overridden = probe(dir, {"--args-file=" + dir.file("a.args"), "--timeout=5s"}, "over");
  EXPECT_EQ(overridden.code, 0) << describe(overridden);
  EXPECT_NE(overridden.out.find("llvmpipe"), std::string::npos) << "the file's --list-devices was not applied\n"
                                                                 << overridden.out;
}

const std::regex kVerdict(
    "VERDICT (PASS|FAIL|USAGE|ERROR) exit=([0-9]+) rows=([0-9]+) OK=([0-9]+) PARTIAL=([0-9]+) FAIL=([0-9]+) "
    "UNSUPPORTED=([0-9]+) SKIP=([0-9]+)( why: [^\n]*)?\n");

// The count line of the summary, "N OK, N PARTIAL, N FAIL, N UNSUPPORTED, N SKIP".
std::string count_line(const std::string& out) {
  std::smatch m;
  static const std::regex re("([0-9]+) OK, ([0-9]+) PARTIAL, ([0-9]+) FAIL, ([0-9]+) UNSUPPORTED, ([0-9]+) SKIP");
  return std::regex_search(out, m, re) ? m.str(0) : "";
}

// The verdict's counts written as the summary's count line.
std::string fmt_counts(const std::smatch& m) {
  return m[4].str() + " OK, " + m[5].str() + " PARTIAL, " + m[6].str() + " FAIL, " + m[7].str() + " UNSUPPORTED, " +
         m[8].str() + " SKIP";
}

// Marker mode: options from MARKER.args, the verdict line into MARKER, counts as in the summary, no .tmp left.
TEST(ProbeLaunch, MarkerModeReadsArgsAndWritesTheVerdict) {
  TempDir dir;
  const std::string marker = dir.file("marker");
  write(marker + ".args", "--only=T3-memfd-cross-process\n");
  Finished f = probe(dir, {marker});
  ASSERT_EQ(f.code, 0) << describe(f);
  const std::string verdict = slurp(marker);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(verdict, m, kVerdict)) << verdict;
  EXPECT_EQ(m[1], "PASS");
  EXPECT_EQ(m[2], "0");
  EXPECT_EQ(m[4], "1") << "one row OK: " << verdict;
  int sum = 0;
  for (int i = 4; i <= 8; ++i) sum += std::stoi(m[i]);
  EXPECT_EQ(std::to_string(sum), m[3].str()) << verdict;
  EXPECT_EQ(fmt_counts(m), count_line(f.out)) << f.out;
  EXPECT_FALSE(fs::exists(marker + ".tmp"));
}

// A run that ends 1 says FAIL in the verdict, with the failing row counted, and no why: (nothing stopped the probe).
TEST(ProbeLaunch, VerdictOfAFailingRun) {
  TempDir dir;
  Finished f = finish(start_probe(dir, {"--only=T3-memfd-cross-process", "--timeout=10s",
                                        "--verdict-file=" + dir.file("v")},
                                  "T3-memfd-cross-process:server:mmap:segv"));
  ASSERT_EQ(f.code, 1) << describe(f);
  const std::string verdict = slurp(dir.file("v"));
  std::smatch m;
  ASSERT_TRUE(std::regex_match(verdict, m, kVerdict)) << verdict;
  EXPECT_EQ(m[1], "FAIL");
  EXPECT_EQ(m[2], "1");
  EXPECT_EQ(m[6], "1") << verdict;
  EXPECT_FALSE(m[9].matched) << verdict;
}

// An option refused after phase A (--size larger than any heap) still ends with a verdict: USAGE, exit 2, why.
TEST(ProbeLaunch, VerdictOfALateUsageError) {
  TempDir dir;
  Finished f = probe(dir, {"--size=1099511627776", "--verdict-file=" + dir.file("v")});
  ASSERT_EQ(f.code, 2) << describe(f);
  const std::string verdict = slurp(dir.file("v"));
  std::smatch m;
  ASSERT_TRUE(std::regex_match(verdict, m, kVerdict)) << verdict;
  EXPECT_EQ(m[1], "USAGE");
  EXPECT_NE(m[9].str().find("--size"), std::string::npos) << verdict;
}

struct BadFile {
  const char* name;
  std::string args_text;            // written to DIR/bad.args, unless `path` is set
  std::string path;                 // an args file path other than DIR/bad.args
  std::vector<std::string> expect;  // in stderr ("@" stands for the args file's path)
};

std::string with_path(std::string s, const std::string& path) {
  if (auto at = s.find('@'); at != std::string::npos) s.replace(at, 1, path);
  return s;
}

// Every bad args file: exit 2, the reason naming the file (and line), and neither --output nor --verdict-file created.
TEST(ProbeLaunch, BadArgsFilesAreRefusedAndCreateNothing) {
  TempDir dir;
  ::mkdir(dir.file("a-directory").c_str(), 0755);
  const std::vector<BadFile> cases = {
      {"missing", "", dir.file("none.args"), {"--args-file: cannot read @: No such file or directory, ENOENT (2)"}},
      {"directory", "", dir.file("a-directory"), {"cannot read @: Is a directory, EISDIR (21)"}},
      {"unreadable", "", "/proc/self/mem", {"cannot read @: Input/output error, EIO (5)"}},
      {"unknown option", "--only=T3-memfd-cross-process\n\n--bogus\n", "", {"@:3: ", "--bogus"}},
      {"bad value", "--measure\n--size=abc\n", "", {"--args-file: @:2: --size: \"abc\" is not accepted"}},
      {"empty value", "--json=\n", "", {"@:1: --json: the value after '=' is empty"}},
      {"open quote", "--device='x\n", "", {"@:1: the ' quote is not closed"}},
      {"internal option", "--worker\n", "", {"@:1: --worker is not accepted in an args file"}},
      {"nested", "--args-file=/etc/hostname\n", "", {"@:1: --args-file is not accepted in an args file"}},
      {"positional", "--measure marker\n", "", {"@:1: \"marker\" is not an option"}},
  };
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = c.path.empty() ? dir.file("bad.args") : c.path;
    if (c.path.empty()) write(path, c.args_text);
    Finished f = probe(dir, {"--args-file=" + path, "--output=" + dir.file("out"), "--verdict-file=" + dir.file("v")});
    EXPECT_EQ(f.code, 2) << describe(f);
    for (const std::string& e : c.expect) EXPECT_NE(f.err.find(with_path(e, path)), std::string::npos) << f.err;
    EXPECT_FALSE(fs::exists(dir.file("out")));
    EXPECT_FALSE(fs::exists(dir.file("v")));
    EXPECT_FALSE(fs::exists(dir.file("v.tmp")));
  }
}

// A file mode 0 cannot be read by a user other than root: EACCES, named. (Root reads it regardless.)
TEST(ProbeLaunch, ArgsFileWithoutReadPermission) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a mode-0 file; /proc/self/mem covers a failing read above";
  TempDir dir;
  write(dir.file("a.args"), "--measure\n");
  ::chmod(dir.file("a.args").c_str(), 0);
  Finished f = probe(dir, {"--args-file=" + dir.file("a.args")});
  EXPECT_EQ(f.code, 2) << describe(f);
  EXPECT_NE(f.err.find("cannot read " + dir.file("a.args") + ": Permission denied, EACCES (13)"), std::string::npos)
      << f.err;
}

// Marker mode without MARKER.args, or with a verdict file of its own: exit 2, the marker not created.
TEST(ProbeLaunch, MarkerModeRefusals) {
  TempDir dir;
  const std::string marker = dir.file("m");
  Finished missing = probe(dir, {marker}, "missing");
  EXPECT_EQ(missing.code, 2) << describe(missing);
  EXPECT_NE(missing.err.find("cannot read " + marker + ".args: No such file or directory"), std::string::npos)
      << missing.err;
  write(marker + ".args", "--verdict-file=" + dir.file("other") + "\n");
  Finished both = probe(dir, {marker}, "both");
  EXPECT_EQ(both.code, 2) << describe(both);
  EXPECT_NE(both.err.find("--verdict-file: not accepted with a marker path"), std::string::npos) << both.err;
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_FALSE(fs::exists(dir.file("other")));
}

// --output or --verdict-file that cannot be created: exit 2 naming the path and errno text, nothing else created.
TEST(ProbeLaunch, UnwritableOutputFilesAreRefused) {
  TempDir dir;
  Finished out = probe(dir, {"--output=" + dir.file("no-dir/out"), "--verdict-file=" + dir.file("v")}, "out");
  EXPECT_EQ(out.code, 2) << describe(out);
  EXPECT_NE(out.err.find("--output"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find(dir.file("no-dir/out")), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("ENOENT"), std::string::npos) << out.err;
  Finished verdict = probe(dir, {"--output=" + dir.file("out"), "--verdict-file=" + dir.path.string()}, "verdict");
  EXPECT_EQ(verdict.code, 2) << describe(verdict);
  EXPECT_NE(verdict.err.find("--verdict-file: " + dir.path.string() + " is a directory"), std::string::npos)
      << verdict.err;
  EXPECT_FALSE(fs::exists(dir.file("out")));
  EXPECT_FALSE(fs::exists(dir.file("v")));
}

// Waits until `path` holds `text` or the probe exits; true when the text came while it still ran.
bool appears_while_running(const Started& s, const std::string& path, const std::string& text, double limit_s) {
  const double deadline = now_s() + limit_s;
  while (now_s() < deadline) {
    if (slurp(path).find(text) != std::string::npos) return ::waitpid(s.pid, nullptr, WNOHANG) == 0;
    if (::waitpid(s.pid, nullptr, WNOHANG) != 0) return false;
    ::usleep(50 * 1000);
  }
  return false;
}

// Killed with SIGKILL mid-run (a route hung by a fault, an earlier row already printed to --output as it
// finished), the probe leaves the previous verdict in place, or none: never a part of a new one.
TEST(ProbeLaunch, VerdictFileSurvivesSigkillMidRun) {
  for (const bool previous : {true, false}) {
    SCOPED_TRACE(previous ? "with a previous verdict" : "without one");
    TempDir dir;
    const std::string verdict = dir.file("v"), output = dir.file("out");
    const std::string before = "VERDICT PASS exit=0 rows=0 OK=0 PARTIAL=0 FAIL=0 UNSUPPORTED=0 SKIP=0\n";
    if (previous) write(verdict, before);
    Started s = start_probe(dir, {kTwoRows, "--timeout=60s", "--output=" + output, "--verdict-file=" + verdict},
                            "T3-memfd-cross-process:server:mmap:hang");
    ASSERT_GT(s.pid, 0);
    // T1-opaque-fd is printed first and T3 then hangs: the row must be in the file while the probe runs.
    const bool seen = appears_while_running(s, output, "RESULT T1-opaque-fd ", 60);
    EXPECT_TRUE(seen) << "no RESULT line in --output while the probe ran:\n" << slurp(output) << slurp(s.err_path);
    ::kill(s.pid, SIGKILL);
    int status = 0;
    ::waitpid(s.pid, &status, 0);
    ::kill(-s.pid, SIGKILL);  // the workers
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    if (previous) EXPECT_EQ(slurp(verdict), before);
    else EXPECT_FALSE(fs::exists(verdict));
  }
}

// The text a run writes to --output, with nothing on stdout, is what a run without it prints, byte for byte
// except the pids, fd numbers (the output file takes one: phase A's refused pidfd_getfd step names them),
// any time figure and the private XDG_RUNTIME_DIR's random name (where the environment had none).
TEST(ProbeLaunch, OutputFileHoldsWhatStdoutWould) {
  TempDir dir;
  Finished plain = probe(dir, {kTwoRows}, "plain");
  ASSERT_EQ(plain.code, 0) << describe(plain);
  Finished to_file = probe(dir, {kTwoRows, "--output=" + dir.file("out")}, "file");
  ASSERT_EQ(to_file.code, 0) << describe(to_file);
  EXPECT_EQ(to_file.out, "");
  const std::regex numbers("pid[= ][0-9]+|fd [0-9]+|[0-9]+(\\.[0-9]+)? ?(ns|us|µs|ms|s)\\b|extmem-runtime-[A-Za-z0-9]+");
  const std::string a = std::regex_replace(plain.out, numbers, "N"), b = std::regex_replace(slurp(dir.file("out")), numbers, "N");
  EXPECT_EQ(b, a);
  EXPECT_NE(plain.out.find("== summary"), std::string::npos) << plain.out;
}

}  // namespace
