// os::fetch_fd and Yama's ptrace_scope (include/extmem/os/pidfd.h), on real
// processes: a fetch from this process, from a gone process, of a closed fd
// number, and from a process of another uid without CAP_SYS_PTRACE.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "extmem/os/fd.h"
#include "extmem/os/pidfd.h"

namespace {

using extmem::ErrorKind;
namespace os = extmem::os;

bool same_file(int a, int b) {
  struct stat sa {}, sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A fetch from this very process gives a second fd of the same file, close-on-exec.
TEST(Pidfd, FetchFromSelfIsTheSameFile) {
  auto memfd = os::create_memfd("pidfd-self", 4096);
  ASSERT_TRUE(memfd.ok());
  auto got = os::fetch_fd(::getpid(), memfd->get());
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_NE(got->get(), memfd->get());
  EXPECT_TRUE(same_file(got->get(), memfd->get()));
  EXPECT_TRUE(::fcntl(got->get(), F_GETFD) & FD_CLOEXEC);
}

// An fd number the target does not have is EBADF, with the step naming pid and number.
TEST(Pidfd, ClosedNumberIsEbadfWithStep) {
  const int unused = 987654;
  auto got = os::fetch_fd(::getpid(), unused);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::os);
  EXPECT_EQ(got.error().step, "pidfd_getfd(pid " + std::to_string(::getpid()) + ", fd 987654)");
  EXPECT_EQ(got.error().code, "EBADF (9)");
  EXPECT_EQ(got.error().detail, "Bad file descriptor");
}

// A process that has exited and been reaped is ESRCH at pidfd_open.
TEST(Pidfd, GoneProcessIsEsrchAtPidfdOpen) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  auto got = os::fetch_fd(child, 0);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().step, "pidfd_open(pid " + std::to_string(child) + ")");
  EXPECT_EQ(got.error().code, "ESRCH (3)");
}

// A process of another uid without CAP_SYS_PTRACE is refused with EPERM: the
// child drops to uid/gid 65534 (which clears its capabilities) and fetches from
// us, root. Needs root to drop; skipped otherwise.
TEST(Pidfd, OtherUidWithoutCapSysPtraceIsEperm) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to start a process of another uid (uid " << ::geteuid() << ")";
  auto memfd = os::create_memfd("pidfd-eperm", 4096);
  ASSERT_TRUE(memfd.ok());
  const pid_t parent = ::getpid();
  const int number = memfd->get();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only syscalls here (the test process may have threads): the exit code says what happened.
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(100);
    auto got = os::fetch_fd(parent, number);
    ::_exit(got.ok() ? 0 : got.error().code == "EPERM (1)" ? 1 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << "0: fetched anyway, 2: another error, 100: could not drop to uid 65534";
}

// Without Yama the line says so; with it, the value comes first.
TEST(Pidfd, PtraceScopeText) {
  EXPECT_EQ(os::describe_ptrace_scope(std::nullopt), "absent (no Yama: classic ptrace rules)");
  EXPECT_EQ(os::describe_ptrace_scope(1), "1 (only an ancestor or a PR_SET_PTRACER-named process may fetch)");
  EXPECT_EQ(os::describe_ptrace_scope(0).substr(0, 2), "0 ");
}

}  // namespace
