// Integration tests of `extmem maps`, `va2pa`, `peek`, `poke` and `poll` on
// real processes: tests/programs/memtools_waiter maps a 16 KiB MAP_SHARED
// memfd, waits for the 32-bit word at 0x80 to become 1 and checks that no
// other byte changed (its exit code says so). Every wait here is bounded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

extern char** environ;

namespace {

namespace fs = std::filesystem;

const std::string kBinary = EXTMEM_BINARY;
const std::string kWaiter = std::string(EXTMEM_TEST_PROGRAMS_DIR) + "/memtools_waiter";

double now_s() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// How a command ended and what it printed.
struct Output {
  bool exited = false;  // exited normally; `code` is its status
  int code = -1;
  std::string out, err;
};

// A command running with stdout and stderr captured. The destructor kills and
// reaps it if it is still running.
class Command {
 public:
  explicit Command(const std::vector<std::string>& argv) {
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2: " << std::strerror(errno);
      return;
    }
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    ::posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    std::vector<std::string> copy = argv;
    std::vector<char*> args;
    for (std::string& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    const int rc = ::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    out_ = out_pipe[0];
    err_ = err_pipe[0];
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawnp " << argv[0] << ": " << std::strerror(rc);
      pid_ = -1;
    }
  }
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;
  ~Command() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
    if (err_ >= 0) ::close(err_);
  }

  pid_t pid() const { return pid_; }  // stays valid after finish()

  // The next line of stdout, without its newline; "" when none came within `limit_s`.
  std::string read_line(double limit_s) {
    const double deadline = now_s() + limit_s;
    while (out_buf_.find('\n', line_pos_) == std::string::npos && now_s() < deadline)
      if (!pump(deadline - now_s())) break;
    const std::size_t nl = out_buf_.find('\n', line_pos_);
    if (nl == std::string::npos) return {};
    std::string line = out_buf_.substr(line_pos_, nl - line_pos_);
    line_pos_ = nl + 1;
    return line;
  }

  // Reads until both pipes close, then reaps; kills the command after `limit_s`.
  Output finish(double limit_s) {
    Output o;
    const double deadline = now_s() + limit_s;
    while (now_s() < deadline && pump(deadline - now_s())) {
    }
    if (pid_ <= 0 || reaped_) return o;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (now_s() >= deadline) {
        ADD_FAILURE() << "command still running after " << limit_s << " s; killed";
        ::kill(pid_, SIGKILL);
      }
      const timespec pause{0, 5000000};
      ::nanosleep(&pause, nullptr);
    }
    reaped_ = true;
    o.exited = WIFEXITED(status);
    o.code = o.exited ? WEXITSTATUS(status) : -1;
    o.out = out_buf_;
    o.err = err_buf_;
    return o;
  }

 private:
  // One poll over the open pipes; false once both reached EOF.
  bool pump(double timeout_s) {
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    if (out_ < 0 && err_ < 0) return false;
    const int n = ::poll(fds, 2, static_cast<int>(std::max(0.0, timeout_s) * 1000) + 1);
    if (n <= 0) return true;
    int* fd[2] = {&out_, &err_};
    std::string* buf[2] = {&out_buf_, &err_buf_};
    for (int i = 0; i < 2; ++i) {
      if (*fd[i] < 0 || fds[i].revents == 0) continue;
      char chunk[4096];
      const ssize_t got = ::read(*fd[i], chunk, sizeof chunk);
      if (got > 0) {
        buf[i]->append(chunk, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(*fd[i]);
        *fd[i] = -1;
      }
    }
    return out_ >= 0 || err_ >= 0;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int out_ = -1, err_ = -1;
  std::string out_buf_, err_buf_;
  std::size_t line_pos_ = 0;
};

Output run(const std::vector<std::string>& argv, double limit_s = 30) { return Command(argv).finish(limit_s); }

std::string describe(const Output& o) {
  return "exit " + std::to_string(o.code) + "\nstdout:\n" + o.out + "\nstderr:\n" + o.err;
}

// A memfd name no other test (or concurrent test run) uses.
std::string unique_tag() {
  static int counter = 0;
  return "extmem-waiter-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

// One memtools_waiter: its memfd name, pid and mapping address.
struct Waiter {
  std::string tag = unique_tag();
  Command cmd;
  std::uint64_t base = 0;
  long clone_pid = 0;  ///< with vm_clone: the task in its address space

  explicit Waiter(bool vm_clone = false)
      : cmd(vm_clone ? std::vector<std::string>{kWaiter, tag, "20", "vm-clone"} : std::vector<std::string>{kWaiter, tag, "20"}) {
    const std::string line = cmd.read_line(10);
    char* end = nullptr;
    base = std::strtoull(line.c_str(), &end, 16);
    EXPECT_NE(base, 0u) << "waiter printed \"" << line << "\"";
    if (vm_clone) {
      clone_pid = std::strtol(end, nullptr, 10);
      EXPECT_GT(clone_pid, 0) << "waiter printed \"" << line << "\"";
    }
  }
  std::string pid() const { return std::to_string(cmd.pid()); }
  std::string word() const { return hex(base + 0x80); }
  // SPEC matching exactly this waiter's mapping.
  std::string spec() const { return "perms=rw-s,size=16K,path^=/memfd:" + tag; }
  static std::string hex(std::uint64_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh directory for audit logs and files, removed afterwards.
class MemtoolsCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("extmem-memtools-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// The column of the caret under the echoed `input` in a usage error, or -1.
long caret_column(const std::string& err, const std::string& input) {
  const std::size_t at = err.find("\n  " + input + "\n");
  if (at == std::string::npos) return -1;
  const std::size_t caret_line = at + 3 + input.size() + 1;
  const std::size_t caret = err.find('^', caret_line);
  if (caret == std::string::npos) return -1;
  return static_cast<long>(caret - caret_line) - 2;
}

// Whether this process has CAP_SYS_ADMIN, from /proc/self/status (independent of the library).
bool own_cap_sys_admin() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) return ((std::stoull(line.substr(7), nullptr, 16) >> 21) & 1u) != 0;
  return false;
}

std::vector<std::string> poll_args(const Waiter& w, const fs::path& audit) {
  // By the waiter's own tag: another test's waiter (ctest runs two at a time) must not match.
  return {kBinary, "poll", "--comm=memtools_waiter", "--cmdline=memtools_waiter " + w.tag, "--match=" + w.spec(), "--offset=0x80", "--when===0", "--set=1",
          "--period=0.05", "--audit=" + audit.string()};
}

// poll releases one waiter with exactly one audited write, leaving every other byte alone.
TEST_F(MemtoolsCommands, PollReleasesOneWaiterWithOneAuditedWrite) {
  Waiter w;
  const fs::path audit = dir_ / "audit.log";
  auto args = poll_args(w, audit);
  args.push_back("--duration=1.5");  // long enough to see the waiter go, and to catch a second write
  const Output poll = run(args);
  EXPECT_EQ(poll.code, 0) << describe(poll);
  const Output waiter = w.cmd.finish(5);
  EXPECT_EQ(waiter.code, 0) << "waiter not released or bytes changed\n" << describe(waiter);
  const auto audit_lines = lines_of(read_file(audit));
  ASSERT_EQ(audit_lines.size(), 1u) << read_file(audit);
  EXPECT_NE(audit_lines[0].find(" write pid=" + w.pid() + " "), std::string::npos) << audit_lines[0];
  EXPECT_NE(audit_lines[0].find("addr=" + w.word() + " width=4 old=0x0 new=0x1 readback=0x1 mapping="),
            std::string::npos) << audit_lines[0];
  EXPECT_NE(poll.out.find("poll: + pid " + w.pid()), std::string::npos) << poll.out;
  EXPECT_NE(poll.out.find("poll: - pid " + w.pid() + " gone"), std::string::npos) << poll.out;
}

// A task in the waiter's address space with a pid of its own (clone(CLONE_VM), as
// LeakSanitizer's tracer is while a sanitizer build exits) is the waiter's memory,
// not a second process: one write, nothing left out, exit 0, and the task is named.
TEST_F(MemtoolsCommands, PollCountsATaskInTheSameAddressSpaceOnce) {
  Waiter w(true);
  const fs::path audit = dir_ / "audit.log";
  auto args = poll_args(w, audit);
  args.push_back("--duration=1");
  const Output poll = run(args);
  EXPECT_EQ(poll.code, 0) << describe(poll);
  EXPECT_EQ(w.cmd.finish(5).code, 0) << describe(poll);
  EXPECT_EQ(lines_of(read_file(audit)).size(), 1u) << read_file(audit);
  EXPECT_NE(poll.out.find("poll: = pid " + std::to_string(w.clone_pid) + " comm=memtools_waiter shares the address "
                          "space of pid " + w.pid()), std::string::npos) << describe(poll);
  EXPECT_NE(poll.out.find("1 process seen, 0 failures"), std::string::npos) << describe(poll);
}

// Two waiters at once with --max-processes=2: a preview of both words before
// the first write, then both released, one write each.
TEST_F(MemtoolsCommands, PollReleasesTwoWaitersAtOnce) {
  Waiter a, b;
  const fs::path audit = dir_ / "audit.log";
  // One SPEC for both: the tags share the prefix up to the counter.
  const std::string prefix = a.tag.substr(0, a.tag.rfind('-') + 1);
  const Output poll = run({kBinary, "poll", "--cmdline=memtools_waiter " + prefix, "--match=perms=rw-s,path^=/memfd:" + prefix,
                           "--offset=0x80", "--when===0", "--set=1", "--period=0.05", "--max-writes=2",
                           "--max-processes=2", "--duration=15", "--audit=" + audit.string()});
  EXPECT_EQ(poll.code, 0) << describe(poll);
  const std::size_t preview = poll.out.find("poll: 2 processes are served; before any write");
  EXPECT_NE(preview, std::string::npos) << poll.out;
  EXPECT_NE(poll.out.find("poll: preview: pid " + a.pid() + " "), std::string::npos) << poll.out;
  EXPECT_NE(poll.out.find("poll: preview: pid " + b.pid() + " "), std::string::npos) << poll.out;
  EXPECT_LT(preview, poll.out.find("poll: write pid")) << poll.out;
  EXPECT_EQ(a.cmd.finish(5).code, 0) << "poll: " << describe(poll);
  EXPECT_EQ(b.cmd.finish(5).code, 0) << "poll: " << describe(poll);
  const std::string log = read_file(audit);
  ASSERT_EQ(lines_of(log).size(), 2u) << log << "\npoll: " << describe(poll);
  EXPECT_NE(log.find("pid=" + a.pid() + " "), std::string::npos) << log;
  EXPECT_NE(log.find("pid=" + b.pid() + " "), std::string::npos) << log;
}

// Two matching waiters and no --max-processes: only one is written, the other
// is named as left alone, and the exit status says a match was refused.
TEST_F(MemtoolsCommands, PollWritesOneProcessUnlessToldMore) {
  Waiter a, b;
  const fs::path audit = dir_ / "audit.log";
  const std::string prefix = a.tag.substr(0, a.tag.rfind('-') + 1);
  const Output poll = run({kBinary, "poll", "--cmdline=memtools_waiter " + prefix, "--match=perms=rw-s,path^=/memfd:" + prefix,
                           "--offset=0x80", "--when===0", "--set=1", "--period=0.05", "--duration=1",
                           "--audit=" + audit.string()});
  EXPECT_EQ(poll.code, 3) << describe(poll);
  EXPECT_NE(poll.err.find("matches too, but --max-processes=1 processes were served already in this run"), std::string::npos) << describe(poll);
  EXPECT_EQ(lines_of(read_file(audit)).size(), 1u) << read_file(audit);
  EXPECT_EQ(poll.out.find("poll: preview:"), std::string::npos) << poll.out;  // one process served: nothing to preview
  // Release whichever was left alone by hand.
  for (Waiter* w : {&a, &b})
    (void)run({kBinary, "poke", "--pid=" + w->pid(), "--expect=0", w->word(), "1", "--audit=" + audit.string()});
  EXPECT_EQ(a.cmd.finish(5).code, 0);
  EXPECT_EQ(b.cmd.finish(5).code, 0);
}

// A process that starts after poll is picked up and released.
TEST_F(MemtoolsCommands, PollPicksUpProcessStartedLater) {
  const fs::path audit = dir_ / "audit.log";
  const std::string tag = unique_tag() + "-late";
  // --cmdline with the tag: another test's waiter (ctest -j) would otherwise be the one process served.
  Command poll({kBinary, "poll", "--comm=memtools_waiter", "--cmdline=memtools_waiter " + tag,
                "--match=path^=/memfd:" + tag, "--offset=0x80",
                "--when===0", "--set=1", "--period=0.05", "--max-writes=1", "--duration=15",
                "--audit=" + audit.string()});
  const timespec pause{0, 300000000};  // let poll run a few empty rounds first
  ::nanosleep(&pause, nullptr);
  Command waiter({kWaiter, tag, "20"});
  EXPECT_EQ(waiter.finish(25).code, 0);
  const Output p = poll.finish(20);
  EXPECT_EQ(p.code, 0) << describe(p);
  EXPECT_NE(p.out.find("poll: + pid " + std::to_string(waiter.pid())), std::string::npos) << p.out;
  EXPECT_EQ(lines_of(read_file(audit)).size(), 1u);
}

// --dry-run shows the hit and writes nothing.
TEST_F(MemtoolsCommands, PollDryRunWritesNothing) {
  Waiter w;
  const fs::path audit = dir_ / "audit.log";
  auto args = poll_args(w, audit);
  args.push_back("--dry-run");
  args.push_back("--duration=0.5");
  const Output poll = run(args);
  EXPECT_EQ(poll.code, 0) << describe(poll);
  EXPECT_NE(poll.out.find("poll: would write pid " + w.pid() + " " + w.word() + " 0x0 -> 0x1"), std::string::npos)
      << poll.out;
  EXPECT_TRUE(read_file(audit).empty());
  const Output peek = run({kBinary, "peek", "--pid=" + w.pid(), w.word()});
  EXPECT_NE(peek.out.find("= 0x00000000 (0)"), std::string::npos) << describe(peek);
  // Release it by hand so it ends cleanly.
  EXPECT_EQ(run({kBinary, "poke", "--pid=" + w.pid(), w.word(), "1", "--audit=" + audit.string()}).code, 0);
  EXPECT_EQ(w.cmd.finish(5).code, 0);
}

// poke refuses an address outside every mapping, a mapping not matching SPEC,
// a word crossing the mapping's end and a wrong --expect, writing nothing; then
// a correct poke releases the waiter with every other byte intact.
TEST_F(MemtoolsCommands, PokeRefusalsWriteNothing) {
  Waiter w;
  const fs::path audit = dir_ / "audit.log";
  const std::string pid = "--pid=" + w.pid();
  const std::string log = "--audit=" + audit.string();
  Output o = run({kBinary, "poke", pid, "0x1000", "1", log});
  EXPECT_EQ(o.code, 3) << describe(o);
  EXPECT_NE(o.err.find("NOT_MAPPED"), std::string::npos) << o.err;
  o = run({kBinary, "poke", pid, w.word(), "1", "--match=perms=rw-s,size=8K", log});
  EXPECT_EQ(o.code, 3) << describe(o);
  EXPECT_NE(o.err.find("SPEC_MISMATCH"), std::string::npos) << o.err;
  o = run({kBinary, "poke", pid, Waiter::hex(w.base + 0x4000 - 2), "1", log});
  EXPECT_EQ(o.code, 3) << describe(o);
  EXPECT_NE(o.err.find("CROSSES_MAPPING"), std::string::npos) << o.err;
  o = run({kBinary, "poke", pid, w.word(), "1", "--expect=7", log});
  EXPECT_EQ(o.code, 4) << describe(o);
  EXPECT_NE(o.err.find("EXPECT_MISMATCH"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(audit) && !read_file(audit).empty()) << read_file(audit);

  o = run({kBinary, "peek", pid, "--width=8", w.word()});
  EXPECT_EQ(o.code, 0) << describe(o);
  EXPECT_NE(o.out.find(" u64 = "), std::string::npos) << o.out;
  o = run({kBinary, "peek", pid, w.word()});
  EXPECT_NE(o.out.find("= 0x00000000 (0)"), std::string::npos) << describe(o);

  o = run({kBinary, "poke", pid, w.word(), "1", "--expect=0", "--match=" + w.spec(), log});
  EXPECT_EQ(o.code, 0) << describe(o);
  EXPECT_NE(o.out.find("0x00000000 -> 0x00000001 (read back 0x00000001)"), std::string::npos) << o.out;
  EXPECT_EQ(w.cmd.finish(5).code, 0) << "waiter not released or other bytes changed";
  EXPECT_EQ(lines_of(read_file(audit)).size(), 1u) << read_file(audit);
}

// Negative controls for the waiter itself: a changed byte outside the wait word
// and a wait that never ends are both reported, so its exit 0 above means something.
TEST_F(MemtoolsCommands, WaiterDetectsChangedBytesAndTimeout) {
  Waiter w;
  const std::string log = "--audit=" + (dir_ / "audit.log").string();
  EXPECT_EQ(run({kBinary, "poke", "--pid=" + w.pid(), "--width=1", Waiter::hex(w.base + 0x10), "0xee", log}).code, 0);
  EXPECT_EQ(run({kBinary, "poke", "--pid=" + w.pid(), w.word(), "1", log}).code, 0);
  EXPECT_EQ(w.cmd.finish(5).code, 2);
  Command lonely({kWaiter, unique_tag(), "0.2"});
  EXPECT_EQ(lonely.finish(5).code, 1);
}

// Processes that do not exist, or that we may not read, have their own exit codes.
TEST_F(MemtoolsCommands, MissingAndForbiddenProcesses) {
  Output o = run({kBinary, "peek", "--pid=2147483646", "0x1000"});
  EXPECT_EQ(o.code, 5) << describe(o);
  EXPECT_NE(o.err.find("ENOENT"), std::string::npos) << o.err;
  o = run({kBinary, "maps", "--pid=2147483646"});
  EXPECT_EQ(o.code, 5) << describe(o);
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) not installed";
  // Without any capability, this (capable) test process may not be read.
  o = run({"setpriv", "--bounding-set=-all", "--inh-caps=-all", kBinary, "maps", "--pid=" + std::to_string(::getpid())});
  if (o.err.find("setpriv:") != std::string::npos) GTEST_SKIP() << "setpriv cannot drop capabilities here: " << o.err;
  EXPECT_EQ(o.code, 6) << describe(o);
  EXPECT_TRUE(o.err.find("EACCES") != std::string::npos || o.err.find("EPERM") != std::string::npos) << o.err;
}

// Files: peek and poke at an offset; a word past the end is refused (exit 7) and nothing grows.
TEST_F(MemtoolsCommands, FileModeAndPastEnd) {
  const fs::path file = dir_ / "ram.img";
  {
    std::ofstream out(file, std::ios::binary);
    const std::string zeros(8192, '\0');
    out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  const fs::path audit = dir_ / "audit.log";
  Output o = run({kBinary, "poke", "--file=" + file.string(), "0x100", "0x7461696c", "--audit=" + audit.string()});
  EXPECT_EQ(o.code, 0) << describe(o);
  const std::string bytes = read_file(file);
  EXPECT_EQ(bytes.substr(0x100, 4), "liat");  // 0x7461696c, little-endian
  EXPECT_NE(read_file(audit).find("write file=\"" + file.string() + "\" offset=0x100 width=4 old=0x0 new=0x7461696c"),
            std::string::npos) << read_file(audit);
  // A file offset is hexadecimal like every address ("256" is 0x256); decimal only when asked for with 0n.
  o = run({kBinary, "peek", "--file=" + file.string(), "--width=2", "0n256", "0x102", "256"});
  EXPECT_EQ(o.code, 0) << describe(o);
  EXPECT_NE(o.out.find("@0x100 u16 = 0x696c"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("@0x102 u16 = 0x7461"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("@0x256 u16 = 0x0000"), std::string::npos) << o.out;
  // With --ram-map the address is guest-physical: GPA 0x100100 lies at file offset 0x100.
  o = run({kBinary, "peek", "--file=" + file.string(), "--ram-map=0x100000:0:8K", "0x100100"});
  EXPECT_EQ(o.code, 0) << describe(o);
  EXPECT_NE(o.out.find("@0x100 (gpa 0x100100) u32 = 0x7461696c"), std::string::npos) << o.out;
  o = run({kBinary, "poke", "--file=" + file.string(), "--ram-map=0x100000:0:8K", "0x200000", "1", "--audit=" + audit.string()});
  EXPECT_EQ(o.code, 3) << describe(o);
  o = run({kBinary, "peek", "--file=" + file.string(), "--width=8", "0x2000"});
  EXPECT_EQ(o.code, 7) << describe(o);
  // Someone still writing offsets in decimal is told how addresses are read now.
  o = run({kBinary, "peek", "--file=" + file.string(), "8192"});
  EXPECT_EQ(o.code, 7) << describe(o);
  EXPECT_NE(o.err.find("offsets are hexadecimal, as every address: if 8192 was meant in decimal, write 0n8192"), std::string::npos)
      << o.err;
  o = run({kBinary, "poke", "--file=" + file.string(), "--width=4", "0x1ffe", "1", "--audit=" + audit.string()});
  EXPECT_EQ(o.code, 7) << describe(o);
  EXPECT_NE(o.err.find("PAST_END"), std::string::npos) << o.err;
  EXPECT_EQ(fs::file_size(file), 8192u);
  EXPECT_EQ(read_file(file), bytes);
  EXPECT_EQ(lines_of(read_file(audit)).size(), 1u);
}

// va2pa of this test's own page gives the PFN /proc/self/pagemap gives us directly.
TEST_F(MemtoolsCommands, Va2paAgreesWithOwnPagemap) {
  if (!own_cap_sys_admin()) GTEST_SKIP() << "this test process lacks CAP_SYS_ADMIN: its own PFNs are hidden too";
  const long ps = ::sysconf(_SC_PAGESIZE);
  void* page = ::mmap(nullptr, static_cast<std::size_t>(ps), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  static_cast<volatile char*>(page)[0] = 1;
  ::mlock(page, static_cast<std::size_t>(ps));  // keeps the frame in place where allowed; best effort
  const auto addr = reinterpret_cast<std::uint64_t>(page) + 0x123;

  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::uint64_t entry = 0;
  ASSERT_EQ(::pread(fd, &entry, 8, static_cast<off_t>(addr / static_cast<std::uint64_t>(ps) * 8)), 8);
  ::close(fd);
  ASSERT_TRUE(entry >> 63) << "page not present";
  const std::uint64_t pfn = entry & ((1ull << 55) - 1);
  ASSERT_NE(pfn, 0u);

  const Output o = run({kBinary, "va2pa", "--pid=" + std::to_string(::getpid()), Waiter::hex(addr)});
  EXPECT_EQ(o.code, 0) << describe(o);
  std::ostringstream want;
  want << Waiter::hex(addr) << " pfn=" << Waiter::hex(pfn) << " pa=" << Waiter::hex(pfn * static_cast<std::uint64_t>(ps) + 0x123)
       << " flags=present";
  EXPECT_NE(o.out.find(want.str()), std::string::npos) << "want " << want.str() << "\n" << describe(o);
  ::munmap(page, static_cast<std::size_t>(ps));
}

// Without CAP_SYS_ADMIN the same question says "hidden", never a PFN of 0 (exit 6).
TEST_F(MemtoolsCommands, Va2paPfnHiddenWithoutCapSysAdmin) {
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) not installed";
  const long ps = ::sysconf(_SC_PAGESIZE);
  void* page = ::mmap(nullptr, static_cast<std::size_t>(ps), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  static_cast<volatile char*>(page)[0] = 1;
  const std::string addr = Waiter::hex(reinterpret_cast<std::uint64_t>(page));
  // Dropping CAP_SYS_ADMIN from the bounding set keeps CAP_SYS_PTRACE, so our pagemap stays readable.
  const Output o = run({"setpriv", "--bounding-set=-sys_admin", kBinary, "va2pa", "--pid=" + std::to_string(::getpid()), addr});
  if (o.err.find("setpriv:") != std::string::npos) GTEST_SKIP() << "setpriv cannot drop capabilities here: " << o.err;
  EXPECT_EQ(o.code, 6) << describe(o);
  EXPECT_NE(o.out.find(addr + " pfn=hidden pa=hidden flags=present"), std::string::npos) << describe(o);
  EXPECT_EQ(o.out.find("pfn=0x0 "), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("lacks CAP_SYS_ADMIN"), std::string::npos) << o.err;
  // maps --pagemap says the same.
  const Output m = run({"setpriv", "--bounding-set=-sys_admin", kBinary, "maps", "--pid=" + std::to_string(::getpid()),
                        "--pagemap", "--match=size<=64K"});
  EXPECT_EQ(m.code, 0) << describe(m);
  EXPECT_NE(m.out.find("PFNs hidden"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("pfn=hidden"), std::string::npos) << m.out;
  EXPECT_FALSE(std::regex_search(m.out, std::regex("pfn=0x0\\b"))) << m.out;
  ::munmap(page, static_cast<std::size_t>(ps));
}

// maps --match finds exactly the waiter's mapping; --pagemap shows its 4 pages; --json says the same.
TEST_F(MemtoolsCommands, MapsListsWaiterMapping) {
  Waiter w;
  Output o = run({kBinary, "maps", "--pid=" + w.pid(), "--match=" + w.spec(), "--pagemap"});
  EXPECT_EQ(o.code, 0) << describe(o);
  const auto lines = lines_of(o.out);
  ASSERT_GE(lines.size(), 4u) << o.out;
  std::ostringstream start;
  start << std::hex << std::setw(12) << std::setfill('0') << w.base;
  EXPECT_EQ(lines[2].rfind(start.str() + "-", 0), 0u) << o.out;
  EXPECT_NE(lines[2].find(" rw-s 00000000 "), std::string::npos) << o.out;
  EXPECT_NE(lines[2].find(" 16K /memfd:" + w.tag), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("1 of "), std::string::npos) << o.out;

  o = run({kBinary, "maps", "--pid=" + w.pid(), "--match=" + w.spec(), "--pagemap", "--json"});
  EXPECT_EQ(o.code, 0) << describe(o);
  const auto doc = nlohmann::json::parse(o.out);
  ASSERT_EQ(doc["mappings"].size(), 1u);
  const auto& m = doc["mappings"][0];
  EXPECT_EQ(m["size"], 16384);
  EXPECT_EQ(m["perms"], "rw-s");
  std::uint64_t pages = 0;
  for (const auto& run : m["pages"]) {
    pages += run["pages"].get<std::uint64_t>();
    EXPECT_TRUE(run["present"].get<bool>());  // the waiter wrote every page
    EXPECT_TRUE(run["file_or_shared"].get<bool>());
    EXPECT_EQ(run.contains("pfn_first"), !run["pfn_hidden"].get<bool>());
  }
  EXPECT_EQ(pages, 4u);
  EXPECT_EQ(run({kBinary, "poke", "--pid=" + w.pid(), w.word(), "1", "--audit=" + (dir_ / "a").string()}).code, 0);
  EXPECT_EQ(w.cmd.finish(5).code, 0);
}

// Malformed SPEC, ram-map, addresses, conditions: exit 2, the input echoed with a caret under the bad character.
TEST_F(MemtoolsCommands, MalformedInputExits2WithCaret) {
  const std::string self = "--pid=" + std::to_string(::getpid());
  struct Case {
    std::vector<std::string> args;
    std::string input;
    long column;
  };
  const std::vector<Case> cases = {
      {{"maps", self, "--match=perms=rw-s,sise=4K"}, "perms=rw-s,sise=4K", 11},
      {{"maps", self, "--match=perms=rwxq"}, "perms=rwxq", 9},
      {{"maps", self, "--match=size>=1Q"}, "size>=1Q", 7},
      {{"va2pa", self, "--ram-map=0:0:4K,0x800:0x1000:4K", "0x1000"}, "0:0:4K,0x800:0x1000:4K", 7},
      {{"va2pa", self, "--ram-map=0:0:4K;1:2:3", "0x1000"}, "0:0:4K;1:2:3", 6},
      {{"va2pa", self, "0x7fz0"}, "0x7fz0", 4},
      {{"peek", self, "--width=3", "0x1000"}, "3", 0},
      {{"poke", self, "0x1000", "0x1g"}, "0x1g", 3},
      {{"poll", "--comm=x", "--match=size=4K", "--offset=0x80", "--when==<0", "--set=1"}, "=<0", 0},
      {{"poll", "--comm=x", "--match=size=4K", "--offset=0x80", "--when===0", "--set=1", "--cmdline=(a"}, "(a", 0},
      {{"poll", "--pid=12x", "--match=size=4K", "--offset=0x80", "--when===0", "--set=1"}, "12x", 2},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {kBinary};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const Output o = run(argv);
    EXPECT_EQ(o.code, 2) << c.input << "\n" << describe(o);
    EXPECT_EQ(caret_column(o.err, c.input), c.column) << c.input << "\n" << o.err;
    EXPECT_NE(o.err.find("accepted: "), std::string::npos) << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
  }
  // Missing process selection for poll is a usage error too.
  const Output o = run({kBinary, "poll", "--match=size=4K", "--offset=0x80", "--when===0", "--set=1"});
  EXPECT_EQ(o.code, 2) << describe(o);
  EXPECT_NE(o.err.find("--comm"), std::string::npos) << o.err;
}

}  // namespace
