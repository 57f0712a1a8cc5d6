// The parsers and decoders behind `extmem threads` and `extmem fds`: syscall
// lines, status files, ioctl requests and tables, the fd timeline (durations:
// tests/duration_tests.cpp, the shared parser).
#include <gtest/gtest.h>

#include <chrono>

#include "extmem/memtools/fds.h"
#include "extmem/memtools/ioctl_names.h"
#include "extmem/memtools/syscall.h"
#include "extmem/memtools/task_status.h"
#include "extmem/memtools/threads.h"

namespace {

using namespace extmem::memtools;

TEST(SyscallLine, RunningIsItsOwnKind) {
  auto s = parse_syscall_line("running\n");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->kind, SyscallSample::Kind::running);
}

TEST(SyscallLine, InSyscallKeepsSixArgumentsAndZeroWithoutPrefix) {
  // The kernel prints 0 as "0" (printf's %#lx), every other value with 0x.
  auto s = parse_syscall_line("16 0x3 0xc0406400 0x0 0 0x7f00 0x64 0x7ffd1000 0x7f12345678\n");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->kind, SyscallSample::Kind::in_syscall);
  EXPECT_EQ(s->nr, 16);
  EXPECT_EQ(s->args[0], 3u);
  EXPECT_EQ(s->args[1], 0xc0406400u);
  EXPECT_EQ(s->args[3], 0u);
  EXPECT_EQ(s->args[5], 0x64u);
  EXPECT_EQ(s->sp, 0x7ffd1000u);
  EXPECT_EQ(s->pc, 0x7f12345678u);
}

TEST(SyscallLine, MinusOneIsInTheKernelOutsideASyscall) {
  auto s = parse_syscall_line("-1 0x7ffd1000 0x401000\n");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->kind, SyscallSample::Kind::outside_syscall);
  EXPECT_EQ(s->pc, 0x401000u);
}

TEST(SyscallLine, MalformedLinesPointAtTheFault) {
  SyntaxError bad;
  EXPECT_FALSE(parse_syscall_line("16 0x3 0x4", &bad));
  EXPECT_EQ(bad.column, 10u);  // ended early: too few numbers
  EXPECT_FALSE(parse_syscall_line("16 0x3 zz 0 0 0 0 0 0", &bad));
  EXPECT_EQ(bad.column, 7u);
  EXPECT_FALSE(parse_syscall_line("", &bad));
  EXPECT_FALSE(parse_syscall_line("-1 0x1", &bad));
  EXPECT_FALSE(parse_syscall_line("0x10 0 0 0 0 0 0 0 0", &bad));
  EXPECT_FALSE(parse_syscall_line("16 0 0 0 0 0 0 0 0 0", &bad));  // nine numbers after NR
}

TEST(SyscallNames, ComeFromTheSystemHeader) {
#if defined(__x86_64__)
  EXPECT_EQ(syscall_name(16), "ioctl");
  EXPECT_EQ(syscall_name(202), "futex");
  EXPECT_EQ(syscall_number("read"), 0);
#endif
  EXPECT_EQ(syscall_name(syscall_number("ppoll")), "ppoll");
  EXPECT_EQ(syscall_name(-1), "");
  EXPECT_EQ(syscall_name(99999), "");
  EXPECT_EQ(syscall_fd_arguments("ioctl"), 1u);
  EXPECT_EQ(syscall_fd_arguments("mmap"), 1u << 4);
  EXPECT_EQ(syscall_fd_arguments("futex"), 0u);
}

TEST(TaskStatus, ReadsTheFieldsThreadsUses) {
  auto st = parse_task_status(
      "Name:\tioctl-wait\nUmask:\t0022\nState:\tt (tracing stop)\nTgid:\t100\nNgid:\t0\nPid:\t101\nPPid:\t1\n"
      "TracerPid:\t555\nUid:\t1000\t1000\t1000\t1000\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t2\n");
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(st->name, "ioctl-wait");
  EXPECT_EQ(st->state, 't');
  EXPECT_EQ(st->tgid, 100);
  EXPECT_EQ(st->pid, 101);
  EXPECT_EQ(st->tracer_pid, 555);
  EXPECT_EQ(st->uid, 1000u);
  EXPECT_EQ(st->voluntary_switches, 7u);
  EXPECT_EQ(st->nonvoluntary_switches, 2u);
  EXPECT_EQ(describe_state('t'), "tracing-stop");
}

TEST(TaskStatus, MalformedKnownLineOrNoPidIsAnError) {
  EXPECT_FALSE(parse_task_status("Name:\tx\nPid:\t-4\n"));
  EXPECT_FALSE(parse_task_status("Name:\tx\nPid:\t4\nTracerPid:\tabc\n"));
  EXPECT_FALSE(parse_task_status("Name:\tx\n"));
}

TEST(Ioctl, SplitsTheGenericLayout) {
  // DRM_IOCTL_VERSION is _IOWR('d', 0x00, struct drm_version), 64 bytes on LP64.
  const IoctlFields f = split_ioctl(0xc0406400);
  EXPECT_EQ(f.dir, 3u);
  EXPECT_EQ(f.type, static_cast<unsigned>('d'));
  EXPECT_EQ(f.nr, 0u);
  EXPECT_EQ(f.size, 0x40u);
  EXPECT_EQ(format_ioctl_fields(f), "_IOC(_IOC_READ|_IOC_WRITE, 'd', 0x00, 0x40)");
  EXPECT_EQ(format_ioctl_fields(split_ioctl(0x5401)), "_IOC(_IOC_NONE, 'T', 0x01, 0x0)");
  EXPECT_EQ(format_ioctl_fields(split_ioctl(0x40040980)), "_IOC(_IOC_WRITE, 0x09, 0x80, 0x4)");
}

TEST(Ioctl, BuiltinTableParsesAndNamesEachFamily) {
  const IoctlTable& t = IoctlTable::builtin();
  ASSERT_GT(t.entries().size(), 150u);  // the table failed to parse if it is empty
  EXPECT_NE(describe_ioctl(t, 0xc0406400, "/dev/dri/renderD128").find("DRM_IOCTL_VERSION [drm]"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0xc02064c3, "/dev/dri/card0").find("DRM_IOCTL_SYNCOBJ_WAIT"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0xc020462a, "/dev/nvidiactl").find("NV_ESC_RM_CONTROL [nvidia]"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0xc00446ce, "/dev/nvidia0").find("NV_ESC_ALLOC_OS_EVENT"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0x30000001, "/dev/nvidia-uvm").find("UVM_INITIALIZE [uvm]"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0xc038094a, "/dev/kgsl-3d0").find("IOCTL_KGSL_GPU_COMMAND [kgsl]"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0xc0208005, "/dev/mali0").find("KBASE_IOCTL_MEM_ALLOC [mali]"), std::string::npos);
}

TEST(Ioctl, NamesNeedTheFamilysDevice) {
  const IoctlTable& t = IoctlTable::builtin();
  // The same number on another file is not DRM's: only the _IOC form.
  EXPECT_EQ(describe_ioctl(t, 0xc0406400, "/dev/null"), "0xc0406400 _IOC(_IOC_READ|_IOC_WRITE, 'd', 0x00, 0x40)");
  // Path unknown (denied): named by number, and said so.
  EXPECT_NE(describe_ioctl(t, 0xc0406400, "").find("by number alone"), std::string::npos);
  // The driver-private range of DRM.
  EXPECT_NE(describe_ioctl(t, 0xc0186444, "/dev/dri/renderD128").find("DRM_COMMAND_BASE + 0x4"), std::string::npos);
}

TEST(IoctlTable, UserEntriesWinAndLongerPrefixesWin) {
  auto mine = IoctlTable::parse("# a comment\n\nmine /dev/null d:0x00 MY_WAIT\nany * =0x5401 ANY_TCGETS\n");
  ASSERT_TRUE(mine) << mine.error().message();
  IoctlTable t = IoctlTable::builtin();
  t.add(*mine);
  EXPECT_NE(describe_ioctl(t, 0xc0406400, "/dev/null").find("MY_WAIT [mine]"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0xc0406400, "/dev/dri/card0").find("DRM_IOCTL_VERSION"), std::string::npos);
  EXPECT_NE(describe_ioctl(t, 0x5401, "/dev/pts/0").find("ANY_TCGETS [any]"), std::string::npos);
}

TEST(IoctlTable, MalformedLinesPointAtTheCharacter) {
  SyntaxError bad;
  EXPECT_FALSE(IoctlTable::parse("drm /dev/dri/ d:0x00\n", &bad));  // 3 fields
  EXPECT_EQ(bad.column, 20u);
  EXPECT_FALSE(IoctlTable::parse("drm dev/dri d:0 X\n", &bad));
  EXPECT_EQ(bad.column, 4u);
  EXPECT_FALSE(IoctlTable::parse("drm /dev/dri/ d:0x100 X\n", &bad));
  EXPECT_EQ(bad.column, 14u + 2);
  EXPECT_FALSE(IoctlTable::parse("drm /dev/dri/ d:1 9X\n", &bad));
  EXPECT_EQ(bad.column, 18u);
  EXPECT_FALSE(IoctlTable::parse("Drm /dev/dri/ d:1 X\n", &bad));
  EXPECT_EQ(bad.column, 0u);
  EXPECT_FALSE(IoctlTable::parse("a * =0x100000000 X\n", &bad));
  EXPECT_FALSE(IoctlTable::parse("a * 0x1ff:0 X\n", &bad));
  EXPECT_FALSE(IoctlTable::parse("a * d X\n", &bad));
  EXPECT_TRUE(IoctlTable::parse("a * 0x64:0x2e X\nb * ::1 Y\n"));
}

TEST(DescribeSyscall, IoctlAndFutexAreDecodedAndFdsNamed) {
  SyscallSample s;
  s.kind = SyscallSample::Kind::in_syscall;
  s.nr = syscall_number("ioctl");
  s.args = {3, 0xc0406400, 0x7ffd0000, 0, 0, 0};
  const std::string text =
      describe_syscall(s, IoctlTable::builtin(), [](long fd) { return fd == 3 ? "/dev/dri/card0" : ""; });
  EXPECT_NE(text.find("ioctl(3</dev/dri/card0>, 0xc0406400, 0x7ffd0000"), std::string::npos) << text;
  EXPECT_NE(text.find("DRM_IOCTL_VERSION"), std::string::npos) << text;
  s.nr = syscall_number("futex");
  s.args = {0x1000, 0x80 | 9, 0, 0, 0, 0};
  EXPECT_NE(describe_syscall(s, IoctlTable::builtin(), [](long) { return ""; }).find("op=FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG"),
            std::string::npos);
}

TEST(FdTimeline, PersistentTransientAndReusedNumbers) {
  FdTimeline t;
  t.observe(0.000, {{0, "/dev/null"}, {5, "/old"}});
  t.observe(0.001, {{0, "/dev/null"}, {5, "/old"}, {3, "/a"}});
  t.observe(0.002, {{0, "/dev/null"}, {3, "/a"}});
  t.observe(0.003, {{0, "/dev/null"}, {3, "/b"}});  // fd 3 now names another file
  t.observe(0.004, {{0, "/dev/null"}, {4, "/a"}});
  t.observe(0.005, {{0, "/dev/null"}});
  const auto persistent = t.persistent();
  ASSERT_EQ(persistent.size(), 1u);
  EXPECT_EQ(persistent.at(0), "/dev/null");
  const auto& tr = t.transient();
  ASSERT_EQ(tr.count("/a"), 1u);
  const PathHistory& a = tr.at("/a");
  EXPECT_EQ(a.opens, 2u);
  EXPECT_EQ(a.closes, 2u);
  EXPECT_EQ(a.fds, (std::set<int>{3, 4}));
  EXPECT_DOUBLE_EQ(a.first_seen, 0.001);
  EXPECT_DOUBLE_EQ(a.last_seen, 0.004);
  EXPECT_NEAR(a.longest, 0.001, 1e-12);
  EXPECT_NEAR(a.shortest, 0.0, 1e-12);
  EXPECT_EQ(a.shortest_samples, 1u);
  EXPECT_EQ(tr.at("/b").opens, 1u);
  // Open before sampling began: a close seen, but no open.
  EXPECT_EQ(tr.at("/old").opens, 0u);
  EXPECT_EQ(tr.at("/old").closes, 1u);
}

}  // namespace
