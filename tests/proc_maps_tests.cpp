// /proc/PID/maps parsing (proc(5)): real lines, odd paths, and malformed input.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "extmem/os/fd.h"
#include "extmem/os/proc_maps.h"

namespace {

using extmem::Result;
using extmem::os::parse_maps_line;

// A shared memfd mapping line with a path containing spaces parses field by field.
TEST(ProcMaps, ParsesSharedMemfdLine) {
  auto e = parse_maps_line("7f1c2a400000-7f1c2a404000 rw-s 00001000 00:01 4242   /memfd:extmem probe (deleted)\n");
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->start, 0x7f1c2a400000u);
  EXPECT_EQ(e->size(), 0x4000u);
  EXPECT_EQ(e->perms, "rw-s");
  EXPECT_TRUE(e->shared());
  EXPECT_EQ(e->offset, 0x1000u);
  EXPECT_EQ(e->dev_minor, 1u);
  EXPECT_EQ(e->inode, 4242u);
  EXPECT_EQ(e->path, "/memfd:extmem probe (deleted)");
}

// An anonymous mapping has an empty path.
TEST(ProcMaps, AnonymousHasEmptyPath) {
  auto e = parse_maps_line("00400000-00401000 r--p 00000000 00:00 0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, "");
  EXPECT_FALSE(e->shared());
}

// Malformed lines are refused with the field named, never accepted half-parsed.
TEST(ProcMaps, RejectsMalformedLines) {
  for (const char* line : {"", "zz-10 rw-p 0 00:00 0", "10-5 rw-p 0 00:00 0", "10-20 rwxq 0 00:00 0",
                           "10-20 rw-p 0 0000 0", "10-20 rw-p 0 00:00 x", "10-20 rw-p"}) {
    auto e = parse_maps_line(line);
    EXPECT_FALSE(e) << line;
    if (!e) EXPECT_NE(e.error().detail.find("bad "), std::string::npos);
  }
}

// read_maps of this process finds a mapping we just made, with its exact bounds.
TEST(ProcMaps, ReadsOwnMappings) {
  auto fd = extmem::os::create_memfd("proc-maps-test", 16384);
  ASSERT_TRUE(fd);
  auto map = extmem::os::Mapping::map(fd->get(), 16384, MAP_SHARED);
  ASSERT_TRUE(map);
  auto maps = extmem::os::read_maps(0);
  ASSERT_TRUE(maps) << maps.error().message();
  auto addr = reinterpret_cast<std::uint64_t>(map->data());
  bool found = false;
  for (const auto& m : *maps) {
    if (m.start == addr) {
      found = true;
      EXPECT_EQ(m.size(), 16384u);
      EXPECT_EQ(m.perms, "rw-s");
      EXPECT_NE(m.path.find("memfd:proc-maps-test"), std::string::npos);
    }
  }
  EXPECT_TRUE(found);
}

// A process that does not exist is an ENOENT error, not an empty list.
TEST(ProcMaps, MissingProcessIsError) {
  auto maps = extmem::os::read_maps(0x3fffffff);
  ASSERT_FALSE(maps);
  EXPECT_EQ(maps.error().code.rfind("ENOENT", 0), 0u);
}

// A process with 20000 mappings (tests/programs/watch_maps_holder), its pid
// and the count of /proc/PID/maps lines it reported once set up; killed and
// reaped on destruction.
struct Holder {
  pid_t pid = -1;
  long mappings = 0;
  Holder() {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      const std::string exe = std::string(EXTMEM_TEST_PROGRAMS_DIR) + "/watch_maps_holder";
      ::execl(exe.c_str(), exe.c_str(), "--mappings=20000", "--seconds=60", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    FILE* in = ::fdopen(fds[0], "r");
    char line[128] = {};
    if (in != nullptr && std::fgets(line, sizeof line, in) != nullptr) std::sscanf(line, "ready %ld", &mappings);
    if (in != nullptr) std::fclose(in);
  }
  ~Holder() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// Negative control for the test below: read to the end while the process
// lives, the list is whole and no error.
TEST(ProcMaps, LongListOfALiveProcessIsReadWhole) {
  Holder h;
  ASSERT_GT(h.mappings, 10000);
  auto maps = extmem::os::read_maps(h.pid);
  ASSERT_TRUE(maps) << maps.error().message();
  EXPECT_GE(static_cast<long>(maps->size()), h.mappings - 2);
}

// The process ends after the first piece of its maps was read: the kernel ends
// the file early, and the reader says the process ended instead of returning a short list.
TEST(ProcMaps, ProcessEndingMidReadIsAnErrorNotAShortList) {
  Holder h;
  ASSERT_GT(h.mappings, 10000);
  auto reader = extmem::os::MapsReader::open(h.pid);
  ASSERT_TRUE(reader) << reader.error().message();
  std::vector<extmem::os::MapEntry> got;
  auto more = reader->next(got);
  ASSERT_TRUE(more);
  ASSERT_TRUE(*more);
  ASSERT_LT(static_cast<long>(got.size()), h.mappings);  // one piece is a part of the list
  ::kill(h.pid, SIGKILL);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(h.pid), &info, WEXITED | WNOWAIT), 0);  // a zombie now: memory gone
  Result<bool> r = true;
  while (r && *r) r = reader->next(got);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code.rfind("ESRCH", 0), 0u) << r.error().message();
  EXPECT_NE(r.error().message().find("ended while its maps were read"), std::string::npos);
}

}  // namespace
