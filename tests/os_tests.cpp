// Tests of the OS layer: owned fds and mappings (extmem/os/fd.h), child
// processes (extmem/os/child.h) and the error value (extmem/core/error.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/os/child.h"
#include "extmem/os/fd.h"

namespace {

using extmem::Error;
using extmem::ErrorKind;
using extmem::os::ChildProcess;
using extmem::os::count_open_fds;
using extmem::os::create_memfd;
using extmem::os::dup_fd;
using extmem::os::ExitInfo;
using extmem::os::fd_is_open;
using extmem::os::fd_size;
using extmem::os::Mapping;
using extmem::os::UniqueFd;

using Clock = std::chrono::steady_clock;

struct Pipe {
  UniqueFd read, write;
};

Pipe make_pipe() {
  int p[2];
  EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
  return {UniqueFd(p[0]), UniqueFd(p[1])};
}

// A pipe whose ends sit at fd 100 or above, leaving the low numbers free.
Pipe make_high_pipe() {
  Pipe low = make_pipe();
  return {UniqueFd(::fcntl(low.read.get(), F_DUPFD_CLOEXEC, 100)),
          UniqueFd(::fcntl(low.write.get(), F_DUPFD_CLOEXEC, 100))};
}

// Everything readable from `fd` until EOF, giving up after `timeout_ms`.
std::string read_all(int fd, int timeout_ms = 5000) {
  std::string out;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left)) <= 0) break;
    char buf[256];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

ChildProcess spawn_sh(const std::string& script, const std::vector<int>& inherit = {},
                      const std::vector<std::string>& extra_args = {}) {
  std::vector<std::string> argv = {"sh", "-c", script, "sh"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  auto child = ChildProcess::spawn("/bin/sh", argv, inherit);
  EXPECT_TRUE(child.ok()) << child.error().message();
  if (!child.ok()) return {};
  return std::move(child).value();
}

// True when `pid` is neither running nor a zombie child of ours.
bool fully_reaped(pid_t pid) {
  errno = 0;
  const pid_t r = ::waitpid(pid, nullptr, WNOHANG);
  return r == -1 && errno == ECHILD;
}

// VmSize of this process in KiB, read without allocating.
long vm_size_kib() {
  char buf[8192];
  int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* p = std::strstr(buf, "VmSize:");
  return p ? std::strtol(p + 7, nullptr, 10) : -1;
}

// ---------------------------------------------------------------- UniqueFd

int open_devnull() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

// A default UniqueFd holds nothing.
TEST(OsUniqueFd, DefaultIsEmpty) {
  UniqueFd fd;
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(fd.get(), -1);
}

// The destructor closes the owned fd.
TEST(OsUniqueFd, DestructorCloses) {
  int raw = open_devnull();
  ASSERT_GE(raw, 0);
  { UniqueFd fd(raw); }
  EXPECT_FALSE(fd_is_open(raw));
}

// Move construction transfers the fd and empties the source without closing.
TEST(OsUniqueFd, MoveConstructTransfers) {
  int raw = open_devnull();
  UniqueFd a(raw);
  UniqueFd b(std::move(a));
  EXPECT_EQ(a.get(), -1);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(b.get(), raw);
  EXPECT_TRUE(fd_is_open(raw));
}

// Move assignment closes the target's old fd and takes the source's.
TEST(OsUniqueFd, MoveAssignClosesOld) {
  int raw_a = open_devnull(), raw_b = open_devnull();
  UniqueFd a(raw_a), b(raw_b);
  b = std::move(a);
  EXPECT_FALSE(fd_is_open(raw_b));
  EXPECT_TRUE(fd_is_open(raw_a));
  EXPECT_EQ(b.get(), raw_a);
  EXPECT_EQ(a.get(), -1);  // NOLINT(bugprone-use-after-move)
}

// Self move assignment keeps the fd open and owned.
TEST(OsUniqueFd, SelfMoveAssignKeepsFd) {
  int raw = open_devnull();
  UniqueFd a(raw);
  UniqueFd& alias = a;
  a = std::move(alias);
  EXPECT_EQ(a.get(), raw);
  EXPECT_TRUE(fd_is_open(raw));
}

// release() gives the fd up without closing it, leaving the wrapper empty.
TEST(OsUniqueFd, ReleaseDoesNotClose) {
  int raw = open_devnull();
  int got;
  {
    UniqueFd a(raw);
    got = a.release();
    EXPECT_FALSE(a.valid());
  }
  EXPECT_EQ(got, raw);
  EXPECT_TRUE(fd_is_open(raw));
  ::close(raw);
}

// reset(new) closes the old fd and owns the new one.
TEST(OsUniqueFd, ResetReplaces) {
  int raw_a = open_devnull(), raw_b = open_devnull();
  UniqueFd a(raw_a);
  a.reset(raw_b);
  EXPECT_FALSE(fd_is_open(raw_a));
  EXPECT_EQ(a.get(), raw_b);
}

// reset() with no argument closes and empties.
TEST(OsUniqueFd, ResetEmpties) {
  int raw = open_devnull();
  UniqueFd a(raw);
  a.reset();
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(fd_is_open(raw));
}

// dup_fd gives a distinct close-on-exec fd on the same file.
TEST(OsFd, DupFdIsDistinctCloexecSameFile) {
  auto m = create_memfd("dup", 100);
  ASSERT_TRUE(m.ok());
  auto d = dup_fd(m->get());
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->get(), m->get());
  EXPECT_NE(::fcntl(d->get(), F_GETFD) & FD_CLOEXEC, 0);
  ASSERT_EQ(::pwrite(d->get(), "hi", 2, 0), 2);
  char back[2] = {};
  ASSERT_EQ(::pread(m->get(), back, 2, 0), 2);
  EXPECT_EQ(std::string(back, 2), "hi");
}

// dup_fd of a closed fd fails with os_error("dup") carrying EBADF.
TEST(OsFd, DupFdOfClosedFdFails) {
  int raw = open_devnull();
  ::close(raw);
  auto d = dup_fd(raw);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, ErrorKind::os);
  EXPECT_EQ(d.error().step, "dup");
  EXPECT_EQ(d.error().code, "EBADF (9)");
}

// fd_is_open tells open from closed, and -1 is never open.
TEST(OsFd, FdIsOpen) {
  int raw = open_devnull();
  EXPECT_TRUE(fd_is_open(raw));
  ::close(raw);
  EXPECT_FALSE(fd_is_open(raw));
  EXPECT_FALSE(fd_is_open(-1));
}

// count_open_fds rises by one for a new fd and falls back when it closes.
TEST(OsFd, CountOpenFdsTracksOpenAndClose) {
  const std::size_t before = count_open_fds();
  ASSERT_GT(before, 2u);
  {
    UniqueFd a(open_devnull());
    EXPECT_EQ(count_open_fds(), before + 1);
  }
  EXPECT_EQ(count_open_fds(), before);
}

// create_memfd makes a close-on-exec fd of exactly the requested size.
TEST(OsFd, CreateMemfdHasRequestedSize) {
  auto m = create_memfd("size", 12345);
  ASSERT_TRUE(m.ok()) << m.error().message();
  struct stat st {};
  ASSERT_EQ(::fstat(m->get(), &st), 0);
  EXPECT_EQ(st.st_size, 12345);
  EXPECT_NE(::fcntl(m->get(), F_GETFD) & FD_CLOEXEC, 0);
}

// fd_size reports a memfd's size in bytes.
TEST(OsFd, FdSizeOfMemfd) {
  auto m = create_memfd("fdsize", 3 * 4096 + 17);
  ASSERT_TRUE(m.ok());
  auto s = fd_size(m->get());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(*s, 3u * 4096 + 17);
}

// fd_size of an empty memfd is 0, not an error.
TEST(OsFd, FdSizeOfEmptyMemfdIsZero) {
  auto m = create_memfd("empty", 0);
  ASSERT_TRUE(m.ok());
  auto s = fd_size(m->get());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(*s, 0u);
}

// fd_size of a pipe (no size, not seekable) fails naming lseek and ESPIPE.
TEST(OsFd, FdSizeOfPipeFails) {
  Pipe p = make_pipe();
  auto s = fd_size(p.read.get());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::os);
  EXPECT_EQ(s.error().step, "lseek(SEEK_END)");
  EXPECT_NE(s.error().code.find("ESPIPE"), std::string::npos) << s.error().code;
}

// fd_size of a closed fd fails in fstat with EBADF.
TEST(OsFd, FdSizeOfClosedFdFails) {
  int raw = open_devnull();
  ::close(raw);
  auto s = fd_size(raw);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().step, "fstat");
  EXPECT_EQ(s.error().code, "EBADF (9)");
}

// ---------------------------------------------------------------- Mapping

constexpr std::size_t k64K = 64 * 1024;

// map_aligned returns an address aligned to 64 KiB.
TEST(OsMapping, MapAlignedIs64KAligned) {
  auto m = create_memfd("aligned", k64K);
  ASSERT_TRUE(m.ok());
  for (int i = 0; i < 8; ++i) {  // several, so a lucky naturally aligned address does not pass alone
    auto map = Mapping::map_aligned(m->get(), k64K, k64K);
    ASSERT_TRUE(map.ok()) << map.error().message();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(map->data()) % k64K, 0u);
    EXPECT_EQ(map->size(), k64K);
  }
}

// map_aligned honours a 2 MiB alignment too.
TEST(OsMapping, MapAlignedHonoursLargeAlignment) {
  constexpr std::size_t k2M = 2 * 1024 * 1024;
  auto m = create_memfd("aligned2m", 8192);
  ASSERT_TRUE(m.ok());
  auto map = Mapping::map_aligned(m->get(), 8192, k2M);
  ASSERT_TRUE(map.ok()) << map.error().message();
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(map->data()) % k2M, 0u);
}

// A write through the aligned mapping is seen through a second, ordinary mapping of the memfd, and back.
TEST(OsMapping, MapAlignedMapsTheMemfdBytes) {
  auto m = create_memfd("aligned-bytes", k64K);
  ASSERT_TRUE(m.ok());
  auto aligned = Mapping::map_aligned(m->get(), k64K, k64K);
  auto plain = Mapping::map(m->get(), k64K, MAP_SHARED);
  ASSERT_TRUE(aligned.ok() && plain.ok());
  ASSERT_NE(aligned->data(), plain->data());
  std::memcpy(aligned->data() + 1000, "through aligned", 16);
  EXPECT_EQ(std::memcmp(plain->data() + 1000, "through aligned", 16), 0);
  std::memcpy(plain->data() + k64K - 16, "through plain..", 16);
  EXPECT_EQ(std::memcmp(aligned->data() + k64K - 16, "through plain..", 16), 0);
}

// map_aligned maps the memfd from offset 0: bytes written with pwrite at 0 appear at data()[0].
TEST(OsMapping, MapAlignedStartsAtOffsetZero) {
  auto m = create_memfd("aligned-off", k64K);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(::pwrite(m->get(), "HEAD", 4, 0), 4);
  auto aligned = Mapping::map_aligned(m->get(), k64K, k64K);
  ASSERT_TRUE(aligned.ok());
  EXPECT_EQ(std::memcmp(aligned->data(), "HEAD", 4), 0);
}

// map_aligned leaves no reserved address space behind: VmSize grows by the mapping's size only.
TEST(OsMapping, MapAlignedReleasesTheReserve) {
  constexpr std::size_t kAlign = 16 * 1024 * 1024;
  auto m = create_memfd("aligned-vm", k64K);
  ASSERT_TRUE(m.ok());
  const long before = vm_size_kib();
  ASSERT_GT(before, 0);
  long during = 0;
  {
    auto map = Mapping::map_aligned(m->get(), k64K, kAlign);
    ASSERT_TRUE(map.ok());
    during = vm_size_kib();
  }
  const long after = vm_size_kib();
  EXPECT_EQ(during - before, static_cast<long>(k64K / 1024));
  EXPECT_EQ(after, before);
}

// map_aligned rejects an alignment that is not a power of two or is below the page size.
TEST(OsMapping, MapAlignedRejectsBadAlignment) {
  auto m = create_memfd("aligned-bad", k64K);
  ASSERT_TRUE(m.ok());
  for (std::size_t a : {std::size_t{0}, std::size_t{512}, std::size_t{3 * 4096}, std::size_t{k64K + 4096}}) {
    SCOPED_TRACE(a);
    auto map = Mapping::map_aligned(m->get(), k64K, a);
    ASSERT_FALSE(map.ok());
    EXPECT_EQ(map.error().kind, ErrorKind::invalid_argument);
  }
}

// map_aligned of a closed fd fails with an os error and leaves no mapping.
TEST(OsMapping, MapAlignedOfClosedFdFails) {
  int raw = open_devnull();
  ::close(raw);
  const long before = vm_size_kib();
  auto map = Mapping::map_aligned(raw, k64K, k64K);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.error().kind, ErrorKind::os);
  EXPECT_EQ(map.error().code, "EBADF (9)");
  EXPECT_EQ(vm_size_kib(), before);
}

// A MAP_SHARED mapping writes through to the memfd.
TEST(OsMapping, SharedMapWritesThrough) {
  auto m = create_memfd("shared", 4096);
  ASSERT_TRUE(m.ok());
  auto map = Mapping::map(m->get(), 4096, MAP_SHARED);
  ASSERT_TRUE(map.ok());
  std::memcpy(map->data() + 7, "abc", 3);
  char back[3] = {};
  ASSERT_EQ(::pread(m->get(), back, 3, 7), 3);
  EXPECT_EQ(std::string(back, 3), "abc");
}

// An anonymous mapping is zero-filled and of the requested size.
TEST(OsMapping, AnonymousIsZeroed) {
  auto map = Mapping::anonymous(3 * 4096);
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->size(), 3u * 4096);
  for (std::byte b : map->bytes()) ASSERT_EQ(b, std::byte{0});
}

// The destructor unmaps the range (mincore reports ENOMEM for it afterwards).
TEST(OsMapping, DestructorUnmaps) {
  void* addr = nullptr;
  {
    auto map = Mapping::anonymous(4096);
    ASSERT_TRUE(map.ok());
    addr = map->data();
  }
  unsigned char vec = 0;
  errno = 0;
  EXPECT_EQ(::mincore(addr, 4096, &vec), -1);
  EXPECT_EQ(errno, ENOMEM);
}

// Moving a Mapping transfers the range and empties the source.
TEST(OsMapping, MoveTransfers) {
  auto map = Mapping::anonymous(4096);
  ASSERT_TRUE(map.ok());
  std::byte* addr = map->data();
  Mapping a = std::move(map).value();
  Mapping b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), addr);
  b.data()[0] = std::byte{1};  // still mapped
  EXPECT_EQ(b.data()[0], std::byte{1});
}

// ---------------------------------------------------------------- ChildProcess

// A child that exits 3 is reported as exited with code 3.
TEST(OsChild, ExitCodeIsReported) {
  ChildProcess c = spawn_sh("exit 3");
  auto info = c.wait(5000);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_TRUE(info->exited);
  EXPECT_FALSE(info->signaled);
  EXPECT_EQ(info->code, 3);
  EXPECT_EQ(info->describe(), "exit 3");
}

// wait(-1) blocks until the child ends and reports it.
TEST(OsChild, WaitForeverReturnsWhenChildEnds) {
  ChildProcess c = spawn_sh("exit 0");
  auto info = c.wait(-1);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->exited);
  EXPECT_EQ(info->code, 0);
}

// A child killed by SIGSEGV is reported as signaled with the name SIGSEGV.
TEST(OsChild, SegvIsReportedAsSignal) {
  ChildProcess c = spawn_sh("ulimit -c 0; kill -SEGV $$");
  auto info = c.wait(5000);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_TRUE(info->signaled);
  EXPECT_FALSE(info->exited);
  EXPECT_EQ(info->signal, SIGSEGV);
  EXPECT_EQ(extmem::os::signal_name(info->signal), "SIGSEGV");
  EXPECT_EQ(info->describe(), "SIGSEGV");
}

// wait with a timeout on a sleeping child returns ErrorKind::timeout after about the timeout.
TEST(OsChild, WaitTimesOut) {
  ChildProcess c = spawn_sh("exec sleep 10");
  const auto start = Clock::now();
  auto info = c.wait(200);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().kind, ErrorKind::timeout);
  EXPECT_GE(ms, 190);
  EXPECT_LT(ms, 3000);
  EXPECT_GT(c.pid(), 0) << "a timed-out wait must keep the child owned";
}

// kill_and_reap after a timed-out wait kills the child and leaves no zombie.
TEST(OsChild, KillAndReapLeavesNoZombie) {
  ChildProcess c = spawn_sh("exec sleep 10");
  const pid_t pid = c.pid();
  ASSERT_FALSE(c.wait(50).ok());
  ExitInfo info = c.kill_and_reap();
  EXPECT_TRUE(info.signaled);
  EXPECT_EQ(info.signal, SIGKILL);
  EXPECT_TRUE(fully_reaped(pid));
  EXPECT_LE(c.pid(), 0);
}

// The destructor kills and reaps a child that is still running.
TEST(OsChild, DestructorKillsRunningChild) {
  pid_t pid = -1;
  const auto start = Clock::now();
  {
    ChildProcess c = spawn_sh("exec sleep 10");
    pid = c.pid();
    ASSERT_GT(pid, 0);
  }
  EXPECT_TRUE(fully_reaped(pid));
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// Move-assigning over a running child kills and reaps the old one.
TEST(OsChild, MoveAssignKillsOldChild) {
  ChildProcess a = spawn_sh("exec sleep 10");
  const pid_t old_pid = a.pid();
  a = spawn_sh("exit 0");
  EXPECT_TRUE(fully_reaped(old_pid));
  EXPECT_NE(a.pid(), old_pid);
  EXPECT_TRUE(a.wait(5000).ok());
}

// Waiting on a child that was already reaped is an error, not a hang.
TEST(OsChild, WaitAfterReapIsError) {
  ChildProcess c = spawn_sh("exit 0");
  ASSERT_TRUE(c.wait(5000).ok());
  auto again = c.wait(100);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::invalid_argument);
}

// Spawning a missing executable fails with os_error("posix_spawn") and ENOENT.
TEST(OsChild, SpawnMissingExecutableFails) {
  auto c = ChildProcess::spawn("/nonexistent/extmem-no-such-binary", {"x"}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::os);
  EXPECT_EQ(c.error().step, "posix_spawn");
  EXPECT_NE(c.error().code.find("ENOENT"), std::string::npos) << c.error().code;
}

// Inherited fds arrive as fd 3 and 4, in the order given.
TEST(OsChild, InheritedFdsArriveAs3And4) {
  Pipe first = make_pipe(), second = make_pipe();
  ChildProcess c = spawn_sh("echo three >&3; echo four >&4", {first.write.get(), second.write.get()});
  first.write.reset();
  second.write.reset();
  EXPECT_EQ(read_all(first.read.get()), "three\n");
  EXPECT_EQ(read_all(second.read.get()), "four\n");
  auto info = c.wait(5000);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->describe(), "exit 0");
}

// The order of `inherit` decides the numbering: the first fd given becomes 3 even if its number is higher.
TEST(OsChild, InheritOrderDecidesNumbering) {
  Pipe low = make_pipe(), high = make_pipe();
  ChildProcess c = spawn_sh("echo three >&3; echo four >&4", {high.write.get(), low.write.get()});
  low.write.reset();
  high.write.reset();
  EXPECT_EQ(read_all(high.read.get()), "three\n");
  EXPECT_EQ(read_all(low.read.get()), "four\n");
  ASSERT_TRUE(c.wait(5000).ok());
}

// Puts a close-on-exec copy of `source` at fd number `target`; restore() (or the
// destructor) puts back whatever the test runner had there, or closes the number.
class FdAt {
 public:
  FdAt(int source, int target) : target_(target) {
    saved_flags_ = ::fcntl(target, F_GETFD);
    if (saved_flags_ >= 0) saved_ = ::fcntl(target, F_DUPFD_CLOEXEC, 200);
    placed_ = ::dup3(source, target, O_CLOEXEC) == target;
  }
  FdAt(const FdAt&) = delete;
  FdAt& operator=(const FdAt&) = delete;
  ~FdAt() { restore(); }
  bool placed() const { return placed_; }
  void restore() {
    if (!placed_) return;
    placed_ = false;
    if (saved_ >= 0) {
      ::dup3(saved_, target_, (saved_flags_ & FD_CLOEXEC) ? O_CLOEXEC : 0);
      ::close(saved_);
    } else {
      ::close(target_);
    }
  }

 private:
  int target_;
  int saved_ = -1;
  int saved_flags_ = -1;
  bool placed_ = false;
};

// Sources that already are fds 3 and 4, given swapped, still arrive swapped (no clobbering by dup2).
TEST(OsChild, InheritSwapOfFds3And4) {
  Pipe p3 = make_high_pipe(), p4 = make_high_pipe();
  FdAt fd3(p3.write.get(), 3), fd4(p4.write.get(), 4);
  ASSERT_TRUE(fd3.placed() && fd4.placed());
  p3.write.reset();
  p4.write.reset();
  ChildProcess c = spawn_sh("echo to-three >&3; echo to-four >&4", {4, 3});
  fd3.restore();
  fd4.restore();
  EXPECT_EQ(read_all(p4.read.get()), "to-three\n");  // child fd 3 is our fd 4
  EXPECT_EQ(read_all(p3.read.get()), "to-four\n");
  ASSERT_TRUE(c.wait(5000).ok());
}

// An inherited source that is itself fd 3 stays open in the child (dup2(3,3) must not keep FD_CLOEXEC).
TEST(OsChild, InheritFd3AsFd3) {
  Pipe p = make_high_pipe();
  FdAt fd3(p.write.get(), 3);
  ASSERT_TRUE(fd3.placed());
  p.write.reset();
  ChildProcess c = spawn_sh("echo on-three >&3", {3});
  fd3.restore();
  EXPECT_EQ(read_all(p.read.get()), "on-three\n");
  ASSERT_TRUE(c.wait(5000).ok());
}

// Script run in the child: prints "open N" or "closed N" on fd 3 for each argument N.
constexpr const char* kProbeFds =
    "for n in \"$@\"; do if [ -e /proc/self/fd/$n ]; then echo \"open $n\" >&3; "
    "else echo \"closed $n\" >&3; fi; done";

// A close-on-exec fd of ours that was not inherited is not visible in the child.
TEST(OsChild, CloexecFdNotInheritedIsInvisible) {
  auto m = create_memfd("not-inherited", 64);
  ASSERT_TRUE(m.ok());
  UniqueFd probe(::fcntl(m->get(), F_DUPFD_CLOEXEC, 40));
  ASSERT_GE(probe.get(), 40);
  Pipe out = make_pipe();
  ChildProcess c = spawn_sh(kProbeFds, {out.write.get()}, {"3", std::to_string(probe.get())});
  out.write.reset();
  EXPECT_EQ(read_all(out.read.get()), "open 3\nclosed " + std::to_string(probe.get()) + "\n");
  ASSERT_TRUE(c.wait(5000).ok());
}

// Only fds 0..2 and the inherited ones reach the child: nothing at 4..9 (whatever the runner left open) or 64..69 (staging).
TEST(OsChild, NoStagingCopiesReachTheChild) {
  Pipe out = make_pipe();
  std::vector<std::string> probe = {"3"};
  for (int n = 4; n < 10; ++n) probe.push_back(std::to_string(n));
  for (int n = 64; n < 70; ++n) probe.push_back(std::to_string(n));
  std::string want = "open 3\n";
  for (std::size_t i = 1; i < probe.size(); ++i) want += "closed " + probe[i] + "\n";
  ChildProcess c = spawn_sh(kProbeFds, {out.write.get()}, probe);
  out.write.reset();
  EXPECT_EQ(read_all(out.read.get()), want);
  ASSERT_TRUE(c.wait(5000).ok());
}

// An fd opened without O_CLOEXEC (as third-party code and drivers may) and not inherited is not visible in the child.
TEST(OsChild, NonCloexecFdNotInheritedIsInvisible) {
  auto m = create_memfd("not-inherited-plain", 64);
  ASSERT_TRUE(m.ok());
  UniqueFd probe(::fcntl(m->get(), F_DUPFD, 41));  // no FD_CLOEXEC
  ASSERT_GE(probe.get(), 41);
  Pipe out = make_pipe();
  ChildProcess c = spawn_sh(kProbeFds, {out.write.get()}, {"3", std::to_string(probe.get())});
  out.write.reset();
  EXPECT_EQ(read_all(out.read.get()), "open 3\nclosed " + std::to_string(probe.get()) + "\n");
  ASSERT_TRUE(c.wait(5000).ok());
}

// Spawning and reaping children leaves the parent's open fd count unchanged.
TEST(OsChild, SpawnDoesNotLeakParentFds) {
  Pipe out = make_pipe();
  const std::size_t before = count_open_fds();
  for (int i = 0; i < 5; ++i) {
    ChildProcess c = spawn_sh("exit 0", {out.write.get(), out.write.get()});
    ASSERT_TRUE(c.wait(5000).ok());
  }
  EXPECT_EQ(count_open_fds(), before);
}

// ---------------------------------------------------------------- names and errors

// ExitInfo::describe gives "exit N" for an exit and the signal name for a signal.
TEST(OsExitInfo, Describe) {
  ExitInfo exited;
  exited.exited = true;
  exited.code = 0;
  EXPECT_EQ(exited.describe(), "exit 0");
  exited.code = 42;
  EXPECT_EQ(exited.describe(), "exit 42");
  ExitInfo killed;
  killed.signaled = true;
  killed.signal = SIGKILL;
  EXPECT_EQ(killed.describe(), "SIGKILL");
  killed.signal = SIGABRT;
  EXPECT_EQ(killed.describe(), "SIGABRT");
}

// signal_name spells common signals with the SIG prefix and unknown numbers as "signal N".
TEST(OsSignalName, NamesAndFallback) {
  EXPECT_EQ(extmem::os::signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(extmem::os::signal_name(SIGBUS), "SIGBUS");
  EXPECT_EQ(extmem::os::signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(extmem::os::signal_name(200), "signal 200");
  EXPECT_EQ(extmem::os::signal_name(-1), "signal -1");
}

// errno_code gives "ENAME (N)".
TEST(OsErrorCode, ErrnoCodeNameAndNumber) {
  EXPECT_EQ(extmem::errno_code(EBADF), "EBADF (9)");
  EXPECT_EQ(extmem::errno_code(ENOENT), "ENOENT (2)");
  EXPECT_EQ(extmem::errno_code(EPERM), "EPERM (1)");
}

// errno_code of an unnamed errno value is "errno N".
TEST(OsErrorCode, ErrnoCodeUnnamed) { EXPECT_EQ(extmem::errno_code(99999), "errno 99999"); }

// os_error fills step, kind os, the errno code and the detail.
TEST(OsError, OsErrorFields) {
  Error e = extmem::os_error("mmap", EINVAL, "size 0");
  EXPECT_EQ(e.step, "mmap");
  EXPECT_EQ(e.kind, ErrorKind::os);
  EXPECT_EQ(e.code, "EINVAL (22)");
  EXPECT_EQ(e.detail, "size 0");
}

// Error::message is "step: code (detail)".
TEST(OsError, MessageAllParts) {
  Error e{"vkAllocateMemory(export OPAQUE_FD)", ErrorKind::driver, "VK_ERROR_OUT_OF_DEVICE_MEMORY", "4 MiB"};
  EXPECT_EQ(e.message(), "vkAllocateMemory(export OPAQUE_FD): VK_ERROR_OUT_OF_DEVICE_MEMORY (4 MiB)");
}

// Error::message leaves out an empty detail.
TEST(OsError, MessageNoDetail) {
  Error e{"mmap", ErrorKind::os, "EPERM (1)", ""};
  EXPECT_EQ(e.message(), "mmap: EPERM (1)");
}

// Error::message without a code puts the detail after "step: ".
TEST(OsError, MessageNoCode) {
  Error e{"decode frame", ErrorKind::protocol, "", "bad magic"};
  EXPECT_EQ(e.message(), "decode frame: (bad magic)");
}

// Error::message with only a step is the step.
TEST(OsError, MessageStepOnly) {
  Error e{"waitpid", ErrorKind::timeout, "", ""};
  EXPECT_EQ(e.message(), "waitpid");
}

// Error::message without a step starts with the code, without a leading separator.
TEST(OsError, MessageNoStep) {
  Error with_code{"", ErrorKind::os, "EBADF (9)", "x"};
  EXPECT_EQ(with_code.message(), "EBADF (9) (x)");
  Error detail_only{"", ErrorKind::os, "", "x"};
  EXPECT_EQ(detail_only.message(), "(x)");
}

// ErrorKind names are stable.
TEST(OsError, KindNames) {
  EXPECT_STREQ(extmem::to_string(ErrorKind::invalid_argument), "invalid_argument");
  EXPECT_STREQ(extmem::to_string(ErrorKind::os), "os");
  EXPECT_STREQ(extmem::to_string(ErrorKind::driver), "driver");
  EXPECT_STREQ(extmem::to_string(ErrorKind::unsupported), "unsupported");
  EXPECT_STREQ(extmem::to_string(ErrorKind::mismatch), "mismatch");
  EXPECT_STREQ(extmem::to_string(ErrorKind::protocol), "protocol");
  EXPECT_STREQ(extmem::to_string(ErrorKind::timeout), "timeout");
}

}  // namespace
