// ImportDup (probe/worker/import_dup.h), the dup every fd import is handed: what
// it says about the fd's owner after the import, and that it never closes a
// number that no longer names its dup. The "driver" here is the test: it
// closes the dup, or keeps it, as an import would; a reused number is what a
// driver thread opening a file right after the import leaves behind.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/kcmp.h>

#include <string>

#include "extmem/os/fd.h"
#include "probe/worker/import_dup.h"

namespace {

using extmem::probe::ImportDup;

// An fd of the test's own, standing for the route's fd the dup is made from.
struct Source {
  int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ~Source() { ::close(fd); }
};

// Whether kcmp(2) answers here (a kernel without CONFIG_KCMP, or a seccomp filter,
// leaves ImportDup with "open" alone, as documented).
bool kcmp_answers(int fd) {
  const pid_t self = ::getpid();
  return ::syscall(SYS_kcmp, self, self, KCMP_FILE, fd, fd) == 0;
}

TEST(ImportDup, AConsumedDupIsGivenUp) {
  Source src;
  auto dup = ImportDup::of(src.fd);
  ASSERT_TRUE(dup);
  ::close(dup->number());  // the driver took it and closed it
  EXPECT_EQ(dup->settle(true), "fd-consumed=yes");
  EXPECT_TRUE(dup->consumed());
}

TEST(ImportDup, AKeptDupIsSaidToBeKept) {
  Source src;
  auto dup = ImportDup::of(src.fd);
  ASSERT_TRUE(dup);
  const int n = dup->number();
  EXPECT_EQ(dup->settle(true).rfind("fd-consumed=no (import succeeded and the fd is still open", 0), 0u);
  EXPECT_TRUE(dup->consumed()) << "the driver owns it: never closed here";
  EXPECT_TRUE(extmem::os::fd_is_open(n));
  ::close(n);
}

// The number the driver closed is taken by another file before the check: the
// import consumed the fd, and the other file is not ours to close.
TEST(ImportDup, ANumberReusedAfterASuccessIsConsumed) {
  Source src;
  if (!kcmp_answers(src.fd)) GTEST_SKIP() << "kcmp(KCMP_FILE) is not available here";
  auto dup = ImportDup::of(src.fd);
  ASSERT_TRUE(dup);
  const int n = dup->number();
  ::close(n);
  const int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(other, n) << "the lowest free number is reused";
  EXPECT_EQ(dup->settle(true), "fd-consumed=yes");
  ::close(other);
}

TEST(ImportDup, ANumberReusedAfterAFailureIsNotClosedHere) {
  Source src;
  if (!kcmp_answers(src.fd)) GTEST_SKIP() << "kcmp(KCMP_FILE) is not available here";
  int other = -1;
  {
    auto dup = ImportDup::of(src.fd);
    ASSERT_TRUE(dup);
    const int n = dup->number();
    ::close(n);  // a failed import that closed an fd it did not own
    other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_EQ(other, n);
    EXPECT_EQ(dup->settle(false), "fd-consumed=yes (a failed import closed an fd it did not own)");
    EXPECT_TRUE(dup->consumed());
  }
  EXPECT_TRUE(extmem::os::fd_is_open(other)) << "ImportDup closed a file that was not its dup";
  ::close(other);
}

TEST(ImportDup, AFailedImportLeavesTheDupToBeClosedOnce) {
  Source src;
  int n = -1;
  {
    auto dup = ImportDup::of(src.fd);
    ASSERT_TRUE(dup);
    n = dup->number();
    EXPECT_EQ(dup->settle(false), "fd-consumed=no");
    EXPECT_FALSE(dup->consumed());
  }
  EXPECT_FALSE(extmem::os::fd_is_open(n)) << "the dup is closed when the ImportDup goes";
  EXPECT_TRUE(extmem::os::fd_is_open(src.fd));
}

}  // namespace
