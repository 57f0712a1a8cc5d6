// The GLES side of the probe: the import ladder against a scripted fake, the
// EGL context's hygiene, phase A's answers on llvmpipe, and the real
// T1-gles rows on Mesa 22.3 (docs/probe.md, "T1-gles"; docs/results/lavapipe-mesa-22.3.md).
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "extmem/gles/enumerate.h"
#include "extmem/os/fd.h"
#include "extmem/probe/routes.h"
#include "extmem/vulkan/enumerate.h"
#include "gles/egl_context.h"
#include "probe/routes/gles_ladder.h"

namespace {

using extmem::probe::ladder_rungs;
using extmem::probe::LadderResult;
using extmem::probe::Rung;
using extmem::probe::RungOutcome;
using extmem::probe::walk_ladder;

// A fake driver that accepts only the rung at `accept_at` (-1: none) and counts calls.
struct ScriptedImport {
  int accept_at = -1;
  int calls = 0;
  RungOutcome operator()(const Rung&) {
    int index = calls++;
    if (index == accept_at) return {true, {}, {}};
    return {false, index % 2 == 0 ? "glImportMemoryFdEXT" : "glBufferStorageMemEXT",
            index % 2 == 0 ? "GL_INVALID_VALUE" : "GL_OUT_OF_MEMORY"};
  }
};

// With every size distinct the ladder has 8 rungs in the documented order: dedicated, then import size, then buffer size.
TEST(GlesLadder, EightRungsInOrder) {
  std::vector<Rung> r = ladder_rungs(65536, 69632, 73728);
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0].label(), "dedicated=off import=reqs(69632) buffer=requested(65536)");
  EXPECT_EQ(r[1].label(), "dedicated=off import=reqs(69632) buffer=import(69632)");
  EXPECT_EQ(r[3].label(), "dedicated=off import=fd(73728) buffer=import(73728)");
  EXPECT_EQ(r[4].label(), "dedicated=on import=reqs(69632) buffer=requested(65536)");
  EXPECT_EQ(r[7].label(), "dedicated=on import=fd(73728) buffer=import(73728)");
}

// Import size == requested size (lavapipe, NVIDIA): buffer=import(N) is the call buffer=requested(N) already made, so 6 rungs.
TEST(GlesLadder, SameSizeCallIsTriedOnce) {
  std::vector<Rung> r = ladder_rungs(65536, 65536, 69672);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].label(), "dedicated=off import=reqs(65536) buffer=requested(65536)");
  EXPECT_EQ(r[1].label(), "dedicated=off import=fd(69672) buffer=requested(65536)");
  EXPECT_EQ(r[2].label(), "dedicated=off import=fd(69672) buffer=import(69672)");
  EXPECT_EQ(r[3].label(), "dedicated=on import=reqs(65536) buffer=requested(65536)");
  for (std::size_t i = 0; i < r.size(); ++i)
    for (std::size_t j = i + 1; j < r.size(); ++j)
      EXPECT_FALSE(r[i].dedicated == r[j].dedicated && r[i].import_size == r[j].import_size &&
                   r[i].buffer_size == r[j].buffer_size)
          << r[i].label() << " repeats as " << r[j].label();
}

// An fd whose size equals the requirements' size adds no call: only the reqs rungs remain.
TEST(GlesLadder, FdSizeEqualToReqsAddsNothing) {
  std::vector<Rung> r = ladder_rungs(65536, 69632, 69632);
  ASSERT_EQ(r.size(), 4u);
  for (const Rung& rung : r) EXPECT_EQ(rung.import_from, "reqs");
}

// An fd without a size (NVIDIA's opaque fd is not seekable) leaves out the fd-size rungs.
TEST(GlesLadder, UnknownFdSizeLeavesOutFdRungs) {
  std::vector<Rung> r = ladder_rungs(65536, 65536, 0);
  ASSERT_EQ(r.size(), 2u);
  for (const Rung& rung : r) EXPECT_EQ(rung.import_from, "reqs");
}

// Every rejection is reported with its GL call and error, and the accepted rung is named.
TEST(GlesLadder, AcceptedRungAndRejectionsReported) {
  ScriptedImport fake{2};
  LadderResult result = walk_ladder(ladder_rungs(65536, 65536, 69672), std::ref(fake));
  ASSERT_TRUE(result.accepted);
  EXPECT_EQ(result.accepted_text(), "accepted=dedicated=off import=fd(69672) buffer=import(69672)");
  ASSERT_EQ(result.rejected.size(), 2u);
  EXPECT_EQ(result.rejected[0].second.step, "glImportMemoryFdEXT");
  EXPECT_EQ(result.rejected[1].second.gl_error, "GL_OUT_OF_MEMORY");
  EXPECT_EQ(result.ladder_text(),
            "ladder: dedicated=off import=reqs(65536) buffer=requested(65536): glImportMemoryFdEXT -> GL_INVALID_VALUE; "
            "dedicated=off import=fd(69672) buffer=requested(65536): glBufferStorageMemEXT -> GL_OUT_OF_MEMORY");
}

// No rung is tried after the driver accepts one.
TEST(GlesLadder, StopsAtFirstAcceptedRung) {
  ScriptedImport fake{0};
  LadderResult result = walk_ladder(ladder_rungs(65536, 65536, 69672), std::ref(fake));
  EXPECT_EQ(fake.calls, 1);
  EXPECT_TRUE(result.rejected.empty());
  EXPECT_EQ(result.ladder_text(), "");
}

// A driver that refuses everything gets every distinct rung tried once and listed, and accepted=none.
TEST(GlesLadder, AllRejectedListsEveryRung) {
  ScriptedImport fake{-1};
  LadderResult result = walk_ladder(ladder_rungs(65536, 65536, 69672), std::ref(fake));
  EXPECT_EQ(fake.calls, 6);
  EXPECT_FALSE(result.accepted);
  EXPECT_EQ(result.accepted_text(), "accepted=none");
  EXPECT_EQ(result.rejected.size(), 6u);
}

// Creating and destroying the EGL context leaves no fd behind (the probe does it in parent and children).
TEST(GlesContext, CreateDestroyKeepsFdCount) {
  { auto warm = extmem::gles::EglContext::create(); }  // first use may load libraries that stay loaded
  const std::size_t before = extmem::os::count_open_fds();
  for (int i = 0; i < 3; ++i) {
    auto ctx = extmem::gles::EglContext::create();
    ASSERT_TRUE(ctx) << ctx.error().message();
    EXPECT_NE((*ctx)->gl_renderer, "");
  }
  EXPECT_EQ(extmem::os::count_open_fds(), before);
}

// llvmpipe offers the interop extensions and its UUIDs equal lavapipe's (docs/results/lavapipe-mesa-22.3.md).
TEST(GlesPhaseA, LlvmpipeUuidsMatchLavapipe) {
  auto gles = extmem::gles::enumerate();
  ASSERT_TRUE(gles) << gles.error().message();
  auto vk = extmem::vk::enumerate();
  ASSERT_TRUE(vk) << vk.error().message();
  ASSERT_FALSE(vk->devices.empty());
  EXPECT_EQ(gles->platform, "surfaceless");
  bool memory_object_fd = false;
  for (const auto& [name, present] : gles->extensions)
    if (name == "GL_EXT_memory_object_fd") memory_object_fd = present;
  EXPECT_TRUE(memory_object_fd);
  EXPECT_STREQ(extmem::gles::compare_uuid(gles->device_uuid, vk->devices[0].device_uuid), "match");
  EXPECT_STREQ(extmem::gles::compare_uuid(gles->driver_uuid, vk->devices[0].driver_uuid), "match");
}

// The comparison says "not available" rather than "mismatch" when GL has no UUID.
TEST(GlesPhaseA, CompareUuidWords) {
  EXPECT_STREQ(extmem::gles::compare_uuid("", "ab"), "not available");
  EXPECT_STREQ(extmem::gles::compare_uuid("ab", "ab"), "match");
  EXPECT_STREQ(extmem::gles::compare_uuid("ab", "cd"), "mismatch");
}

std::string run_probe(const std::string& args, int& status) {
  std::string out;
  FILE* p = ::popen((std::string(EXTMEM_BINARY) + " probe " + args + " 2>&1").c_str(), "r");
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  status = ::pclose(p);
  return out;
}

std::string line_of(const std::string& out, const std::string& row) {
  std::smatch m;
  std::regex re("RESULT " + row + " [^\n]*");
  return std::regex_search(out, m, re) ? m.str() : "";
}

// Mesa 22.3: llvmpipe imports the lavapipe fd but refuses storage on every rung with
// GL_OUT_OF_MEMORY (a Mesa interop gap); both rows FAIL with the whole ladder listed, each distinct call once.
TEST(GlesProbe, LlvmpipeRefusesStorageOnEveryRung) {
  int status = 0;
  std::string out = run_probe("--only-gles", status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  for (const extmem::probe::RouteInfo& route : extmem::probe::routes()) {
    if (route.group != "gles") continue;
    const std::string& row = route.row;
    std::string line = line_of(out, row);
    ASSERT_FALSE(line.empty()) << out;
    EXPECT_NE(line.find(std::string("RESULT ") + row + " FAIL glmap[i]=no glgpu[D]=no"), std::string::npos) << line;
    EXPECT_NE(line.find("why: glgpu: glBufferStorageMemEXT (every ladder rung) -> GL_OUT_OF_MEMORY"), std::string::npos)
        << line;
    EXPECT_NE(line.find("accepted=none"), std::string::npos) << line;
    EXPECT_NE(line.find("gl-status=storage-refused"), std::string::npos) << line;
    EXPECT_NE(line.find("uuid=match"), std::string::npos) << line;
    std::size_t rungs = 0;
    for (std::size_t at = 0; (at = line.find(": glBufferStorageMemEXT -> GL_OUT_OF_MEMORY", at)) != std::string::npos; ++at)
      ++rungs;
    EXPECT_EQ(rungs, 6u) << line;  // 8 rungs, 2 of them the same call as another (import size == requested)
    EXPECT_EQ(line.find("child died"), std::string::npos) << line;
    EXPECT_EQ(line.find("timeout"), std::string::npos) << line;
  }
}

// --no-gles turns the GLES rows into SKIP and the other rows still run.
TEST(GlesProbe, NoGlesSkipsGlesRows) {
  int status = 0;
  std::string out = run_probe("--no-gles", status);
  EXPECT_NE(line_of(out, "T1-gles-memobj-fd-same-proc").find("SKIP why: excluded by --no-gles"), std::string::npos) << out;
  EXPECT_NE(line_of(out, "T1-opaque-fd").find(" OK "), std::string::npos) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
}

}  // namespace
