// /proc/PID/maps parsing (proc(5)): real lines, odd paths, and malformed input.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include "extmem/os/fd.h"
#include "extmem/os/proc_maps.h"

namespace {

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

}  // namespace
