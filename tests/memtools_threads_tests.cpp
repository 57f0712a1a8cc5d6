// `extmem threads` and `extmem fds` on real processes: a program whose threads
// sit in a known ioctl, futex and poll; a tracer that stops its tracee, stops
// itself, is killed, or traces its tracer back; a reader that opens, reads and
// closes a file on a schedule; a process the tool may not read (another uid).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

#include "support/run_shell.h"
#include "support/temp_files.h"

namespace {

const std::string kPrograms = EXTMEM_TEST_PROGRAMS_DIR;

// A test program started with its stdout on a pipe; killed and reaped on destruction.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  Child(const std::vector<std::string>& argv) {
    int p[2];
    if (::pipe(p) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(p[1], 1);
      ::close(p[0]);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(p[1]);
    out = ::fdopen(p[0], "r");
  }
  std::string line() {
    char buf[512];
    return out != nullptr && std::fgets(buf, sizeof buf, out) != nullptr ? std::string(buf) : "";
  }
  void kill_now() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  ~Child() {
    kill_now();
    if (out != nullptr) std::fclose(out);
  }
};

// The system call file of pid's main thread.
std::string syscall_path(pid_t pid) { return "/proc/" + std::to_string(pid) + "/syscall"; }

std::vector<long> numbers(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  std::vector<long> out;
  in >> word;
  for (long n; in >> n;) out.push_back(n);
  return out;
}

// The line of `text` that contains `needle`, or "".
std::string line_with(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.find(needle) != std::string::npos) return l;
  return "";
}

TEST(ThreadsCommand, NamesTheIoctlFutexAndPollEachThreadSitsIn) {
  Child b({kPrograms + "/threads_blocker", "0xc0406400"});
  std::string ready = b.line();
  if (ready.rfind("seccomp unavailable", 0) == 0) {
    ready = b.line();
    ASSERT_EQ(numbers(ready).size(), 4u) << ready;
  }
  const std::vector<long> n = numbers(ready);
  ASSERT_EQ(n.size(), 4u) << ready;
  extmem::test::TempDir dir;
  std::ofstream(dir.file("names")) << "mine /dev/null d:0x00 EXTMEM_TEST_WAIT\n";
  const auto r = extmem::test::run_extmem("threads --pid=" + std::to_string(n[0]) + " --ioctl-names=" + dir.file("names"));
  EXPECT_EQ(r.code, 0) << r.out;
  if (n[1] != 0) {
    const std::string l = line_with(r.out, std::to_string(n[1]) + " ioctl-wait");
    // The blocker's /dev/null is its lowest free fd: 3 alone, higher when the test runner passes fds down (ctest -j).
    EXPECT_TRUE(std::regex_search(l, std::regex(R"(ioctl\(\d+</dev/null>, 0xc0406400)"))) << r.out;
    EXPECT_NE(l.find("_IOC(_IOC_READ|_IOC_WRITE, 'd', 0x00, 0x40) EXTMEM_TEST_WAIT [mine]"), std::string::npos) << r.out;
  } else {
    ADD_FAILURE() << "seccomp user notification unavailable: the ioctl thread was not checked";
  }
  EXPECT_NE(line_with(r.out, std::to_string(n[2]) + " futex-wait").find("op=FUTEX_WAIT|FUTEX_PRIVATE_FLAG"),
            std::string::npos) << r.out;
  EXPECT_NE(line_with(r.out, std::to_string(n[3]) + " poll-wait").find(" poll("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not stopped, not attached"), std::string::npos);
}

TEST(ThreadsCommand, SampleBuildsAHistogramPerThread) {
  Child b({kPrograms + "/threads_blocker", "0x1234"});
  std::string ready = b.line();
  if (ready.rfind("seccomp", 0) == 0) ready = b.line();
  const std::vector<long> n = numbers(ready);
  ASSERT_EQ(n.size(), 4u) << ready;
  const auto r = extmem::test::run_extmem("threads --pid=" + std::to_string(n[0]) + " --sample=200ms --period=5ms");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tid " + std::to_string(n[2]) + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("futex_"), std::string::npos) << r.out;  // wchan of the futex waiter
}

TEST(ThreadsCommand, VanishedAndZombieProcessesAreExitFive) {
  EXPECT_EQ(extmem::test::run_extmem("threads --pid=2147483000").code, 5);
  // One live and one missing pid: the live one is shown, the missing one said, exit 5.
  Child s({"/bin/sleep", "30"});
  const auto both = extmem::test::run_extmem("threads --pid=" + std::to_string(s.pid) + ",2147483000");
  EXPECT_EQ(both.code, 5) << both.out;
  EXPECT_NE(both.out.find("pid " + std::to_string(s.pid) + " (sleep)"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("pid 2147483000: no such process"), std::string::npos) << both.out;
  const pid_t z = ::fork();
  if (z == 0) ::_exit(0);
  ::usleep(100000);  // becomes a zombie: never reaped until the end of the test
  const auto r = extmem::test::run_extmem("threads --pid=" + std::to_string(z));
  ::waitpid(z, nullptr, 0);
  EXPECT_EQ(r.code, 5) << r.out;
}

// The process ends only once sampling has begun, whatever the machine's load: the
// test ends it when the tool sits in clock_nanosleep between two readings (its
// /proc/PID/syscall), which it reaches only after its first reading. (A sleeper of a
// fixed 0.3 s ended before a sanitized tool had started on a busy machine.)
// Runs `extmem COMMAND --pid=VICTIM EXTRA...`, a sampling loop, and ends the
// victim only once the tool sits in clock_nanosleep between two readings (its
// /proc/PID/syscall): the victim then ends while sampled however slowly the
// sanitized tool starts. A fixed-length victim (sleep 0.3) could end first.
struct SampledRun {
  bool sampled = false;  ///< the tool reached its sampling sleep before it exited
  int exit_code = -1;
  std::string out;
};
SampledRun end_while_sampled(Child& victim, const char* command, std::vector<std::string> extra) {
  extmem::test::TempDir d;
  std::vector<std::string> args = {EXTMEM_BINARY, command, "--pid=" + std::to_string(victim.pid)};
  args.insert(args.end(), extra.begin(), extra.end());
  const pid_t tool = ::fork();
  if (tool == 0) {
    std::freopen(d.file("out").c_str(), "w", stdout);
    ::dup2(1, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(EXTMEM_BINARY, argv.data());
    ::_exit(127);
  }
  SampledRun r;
  if (tool < 0) return r;
  constexpr long kClockNanosleep = 230;  // x86-64
  int status = 0;
  for (;;) {
    long nr = -1;
    std::ifstream(syscall_path(tool)) >> nr;
    if (nr == kClockNanosleep) {
      r.sampled = true;
      break;
    }
    if (::waitpid(tool, &status, WNOHANG) == tool) break;
    ::usleep(1000);
  }
  victim.kill_now();
  if (r.sampled) ::waitpid(tool, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = extmem::test::slurp(d.file("out"));
  return r;
}

TEST(ThreadsCommand, ProcessEndingWhileSampledIsExitFive) {
  Child s({"/bin/sleep", "60"});
  const SampledRun r = end_while_sampled(s, "threads", {"--sample=60s", "--period=10ms"});
  ASSERT_TRUE(r.sampled) << "the tool exited before sampling: " << r.out;
  EXPECT_EQ(r.exit_code, 5) << r.out;
  EXPECT_NE(r.out.find("ended while being sampled"), std::string::npos) << r.out;
}

// Another uid may not read a root process's syscall file: "denied" with the reason, exit 6.
TEST(ThreadsCommand, AnotherUidIsDeniedNotEmpty) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the tool as another uid";
  Child b({kPrograms + "/threads_blocker", "0x1234"});
  std::string ready = b.line();
  if (ready.rfind("seccomp", 0) == 0) ready = b.line();
  const std::vector<long> n = numbers(ready);
  ASSERT_EQ(n.size(), 4u);
  const std::string cmd = "setpriv --reuid=65534 --regid=65534 --clear-groups " + std::string(EXTMEM_BINARY) +
                          " threads --pid=" + std::to_string(n[0]) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t k = std::fread(buf, 1, sizeof buf, p)) out.append(buf, k);
  const int status = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 6) << out;
  EXPECT_NE(out.find("denied: "), std::string::npos) << out;
  EXPECT_NE(out.find("EACCES"), std::string::npos) << out;
  EXPECT_NE(out.find("uid 65534"), std::string::npos) << out;
}

// Output of a shell command line (ours, not user text) and its exit status.
std::pair<std::string, int> shell(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {"", -1};
  std::string out;
  char buf[4096];
  while (std::size_t k = std::fread(buf, 1, sizeof buf, p)) out.append(buf, k);
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// The fd links of a root process are refused to another uid: exit 6 with the
// reason, not an empty list of fds.
TEST(FdsCommand, AnotherUidIsDeniedNotEmpty) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the tool as another uid";
  Child s({"/bin/sleep", "30"});
  const auto [out, code] = shell("setpriv --reuid=65534 --regid=65534 --clear-groups " + std::string(EXTMEM_BINARY) +
                                 " fds --pid=" + std::to_string(s.pid) + " --duration=50ms");
  EXPECT_EQ(code, 6) << out;
  EXPECT_NE(out.find("EACCES"), std::string::npos) << out;
  EXPECT_NE(out.find("denied: "), std::string::npos) << out;
  EXPECT_EQ(out.find("open throughout"), std::string::npos) << out;
}

// A process whose fd directory lists but whose links are refused (here pid 1
// when this container lacks CAP_SYS_PTRACE over it): denied, not "no fds".
TEST(FdsCommand, ListableButUnreadableLinksAreDenied) {
  char buf[256];
  if (::readlink("/proc/1/fd/0", buf, sizeof buf) >= 0 || (errno != EACCES && errno != EPERM))
    GTEST_SKIP() << "pid 1's fd links are readable (or absent) here";
  const auto r = extmem::test::run_extmem("fds --pid=1 --duration=20ms");
  EXPECT_EQ(r.code, 6) << r.out;
  EXPECT_NE(r.out.find("readlink /proc/1/fd/"), std::string::npos) << r.out;
}

// A kernel thread's syscall file reads "0 0x0 ..." (read() with zeros): it is
// named a kernel thread instead.
TEST(ThreadsCommand, KernelThreadIsNotShownInRead) {
  const auto [stat, rc] = shell("cat /proc/2/stat");
  if (rc != 0 || stat.find("(kthreadd)") == std::string::npos) GTEST_SKIP() << "no kthreadd at pid 2 in this pid namespace";
  const auto r = extmem::test::run_extmem("threads --pid=2");
  EXPECT_NE(r.out.find("kernel thread (no user system call)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" read("), std::string::npos) << r.out;
}

TEST(TracerHygiene, StoppedTraceeIsFlaggedThenClearedWhenTheTracerIsKilled) {
  Child tracee({"/bin/sleep", "60"});
  Child tracer({kPrograms + "/threads_tracer", "attach", std::to_string(tracee.pid), "wait"});
  ASSERT_EQ(tracer.line(), "attached " + std::to_string(tracee.pid) + "\n");
  auto r = extmem::test::run_extmem("threads --tracers");
  EXPECT_EQ(r.code, 8) << r.out;
  const std::string flag = line_with(r.out, "FLAG tracee " + std::to_string(tracee.pid));
  EXPECT_NE(flag.find("stopped by its tracer " + std::to_string(tracer.pid)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("destructive: kill -KILL " + std::to_string(tracer.pid)), std::string::npos) << r.out;
  // The same from the tracee's side.
  r = extmem::test::run_extmem("threads --pid=" + std::to_string(tracee.pid));
  EXPECT_EQ(r.code, 8) << r.out;
  EXPECT_NE(r.out.find("traced by " + std::to_string(tracer.pid)), std::string::npos) << r.out;
  // Killing the tracer detaches: nothing flagged for this tracee, TracerPid back to 0.
  tracer.kill_now();
  r = extmem::test::run_extmem("threads --pid=" + std::to_string(tracee.pid));
  EXPECT_EQ(r.out.find("traced by"), std::string::npos) << r.out;
  EXPECT_NE(r.code, 8) << r.out;
  r = extmem::test::run_extmem("threads --tracers");
  EXPECT_EQ(r.out.find("tracee " + std::to_string(tracee.pid) + " "), std::string::npos) << r.out;
}

TEST(TracerHygiene, StoppedTracerIsFlagged) {
  Child tracee({"/bin/sleep", "60"});
  Child tracer({kPrograms + "/threads_tracer", "attach", std::to_string(tracee.pid), "stop-self"});
  ASSERT_EQ(tracer.line(), "attached " + std::to_string(tracee.pid) + "\n");
  std::string out;
  for (int i = 0; i < 100 && out.find("is itself stopped") == std::string::npos; ++i) {
    ::usleep(20000);  // until the tracer's SIGSTOP has taken effect
    out = extmem::test::run_extmem("threads --tracers").out;
  }
  EXPECT_NE(out.find("tracer " + std::to_string(tracer.pid) + " (threads_tracer) is itself stopped"), std::string::npos) << out;
  EXPECT_NE(out.find("kill -CONT " + std::to_string(tracer.pid)), std::string::npos) << out;
}

// A tracer that vfork()ed waits for its child in uninterruptible sleep (D):
// flagged as blocked, named as a vfork wait, with the child to end as the step.
TEST(TracerHygiene, TracerBlockedInUninterruptibleSleepIsFlagged) {
  Child tracee({"/bin/sleep", "60"});
  Child tracer({kPrograms + "/threads_tracer", "attach", std::to_string(tracee.pid), "vfork"});
  ASSERT_EQ(tracer.line(), "attached " + std::to_string(tracee.pid) + "\n");
  extmem::test::ShellRun r;
  for (int i = 0; i < 100 && r.out.find("uninterruptible") == std::string::npos; ++i) {
    ::usleep(20000);  // until the tracer sits in vfork
    r = extmem::test::run_extmem("threads --tracers");
  }
  EXPECT_EQ(r.code, 8) << r.out;
  const std::string flag = line_with(r.out, "FLAG tracer " + std::to_string(tracer.pid));
  EXPECT_NE(flag.find("(threads_tracer) is blocked in uninterruptible sleep"), std::string::npos) << r.out;
  EXPECT_NE(flag.find("waiting for its vfork() child to exec or exit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resumes when its vfork child execs or exits: kill "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("extmem threads --pid=" + std::to_string(tracer.pid)), std::string::npos) << r.out;
}

TEST(TracerHygiene, MutualTracingIsFlaggedAndExpectNoneFailsOnAnyTracer) {
  Child pair({kPrograms + "/threads_tracer", "mutual"});
  const std::vector<long> n = numbers(pair.line());
  ASSERT_EQ(n.size(), 2u);
  const auto r = extmem::test::run_extmem("threads --tracers");
  EXPECT_EQ(r.code, 8) << r.out;
  EXPECT_NE(r.out.find("FLAG mutual tracing: " + std::to_string(n[0]) + " <- " + std::to_string(n[1])), std::string::npos)
      << r.out;
  ::kill(static_cast<pid_t>(n[1]), SIGKILL);  // the forked half; the Child reaps the other
}

TEST(TracerHygiene, NoTracerMeansExitZeroEvenWithExpectNone) {
  const auto r = extmem::test::run_extmem("threads --tracers --expect-none");
  // Other tests may trace concurrently under ctest -j; only a clean machine must say 0.
  if (r.out.find("0 traced threads") != std::string::npos) EXPECT_EQ(r.code, 0) << r.out;
  else EXPECT_EQ(r.code, 8) << r.out;
}

TEST(FdsCommand, SeesTheTransientOpensAndListsPersistentFdsOnce) {
  extmem::test::TempDir dir;
  const std::string file = dir.file("data");
  std::ofstream(file) << std::string(4096, 'x');
  // 20 opens, each held 30 ms, one every 60 ms: a 1 ms sampler cannot miss them all.
  Child opener({kPrograms + "/fds_opener", file, "60000", "30000", "20"});
  const auto r = extmem::test::run_extmem("fds --pid=" + std::to_string(opener.pid) + " --period=1ms --duration=800ms");
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string persist = line_with(r.out, file + ".persist");
  EXPECT_NE(persist, "") << r.out;
  EXPECT_NE(r.out.find("open throughout"), std::string::npos);
  const std::size_t at = r.out.find("\n  " + file + "\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string stats = r.out.substr(at, r.out.find('\n', at + file.size() + 4) - at);
  EXPECT_NE(stats.find("opens seen "), std::string::npos) << r.out;
  EXPECT_EQ(stats.find("opens seen 0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("can be missed"), std::string::npos) << r.out;
}

TEST(FdsCommand, VanishedProcessIsExitFive) {
  EXPECT_EQ(extmem::test::run_extmem("fds --pid=2147483000 --duration=10ms").code, 5);
  Child s({"/bin/sleep", "60"});
  const SampledRun r = end_while_sampled(s, "fds", {"--duration=60s", "--period=10ms"});
  ASSERT_TRUE(r.sampled) << "the tool exited before sampling: " << r.out;
  EXPECT_EQ(r.exit_code, 5) << r.out;
  EXPECT_NE(r.out.find("ended while sampled"), std::string::npos) << r.out;
}

}  // namespace
