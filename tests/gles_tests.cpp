// The GLES side of the probe: the import ladder against a scripted fake, the
// EGL context's hygiene, phase A's answers on llvmpipe, and the real
// T1-gles rows on Mesa 22.3 (docs/probe.md, "T1-gles"; docs/results/lavapipe-mesa-22.3.md).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/gles/enumerate.h"
#include "extmem/os/fd.h"
#include "extmem/probe/routes.h"
#include "extmem/vulkan/enumerate.h"
#include "gles/egl_context.h"
#include "probe/routes/gles/ladder.h"

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

// `env` goes before the command (NAME=value ...); Mesa's GL variables of the test's own
// environment are removed first, so --gl-driver alone decides unless a test sets one.
std::string run_probe(const std::string& args, int& status, const std::string& env = "") {
  std::string out;
  const std::string cmd = "env -u MESA_LOADER_DRIVER_OVERRIDE -u LIBGL_ALWAYS_SOFTWARE -u GALLIUM_DRIVER " + env + " " +
                          EXTMEM_BINARY + " probe " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
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

std::string phase_a_gl_line(const std::string& out) {
  std::smatch m;
  std::regex re("== phase A: GL driver: [^\n]*");
  return std::regex_search(out, m, re) ? m.str() : "";
}

// Every GLES test runs with warm workers and with fresh processes per route: both must agree.
class GlesProbe : public ::testing::TestWithParam<std::string> {
 protected:
  std::string run(const std::string& args, int& status, const std::string& env = "") {
    return run_probe(args + " " + GetParam(), status, env);
  }
};

INSTANTIATE_TEST_SUITE_P(Modes, GlesProbe, ::testing::Values("", "--isolate=route"),
                         [](const auto& info) { return info.param.empty() ? std::string("warm") : std::string("isolated"); });

// auto on lavapipe serves zink, GL on the same Vulkan driver: both rows OK, the renderer named, exit 0.
TEST_P(GlesProbe, AutoServesZinkAndBothRowsOk) {
  int status = 0;
  const std::string json_path = ::testing::TempDir() + "gl_auto_" + std::to_string(::getpid()) + ".json";
  std::string out = run("--only-gles --gl-driver=auto --json=" + json_path, status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(phase_a_gl_line(out).find("GL driver: zink (requested auto): auto: the selected Vulkan device"),
            std::string::npos) << out;
  EXPECT_NE(phase_a_gl_line(out).find("is Mesa's lavapipe"), std::string::npos) << out;
  EXPECT_NE(phase_a_gl_line(out).find("MESA_LOADER_DRIVER_OVERRIDE=zink"), std::string::npos) << out;
  // zink, then the Vulkan device, in words that change with Mesa (see DefaultRunGlesRowsOkOnZink).
  EXPECT_NE(out.find("GL_RENDERER=zink"), std::string::npos) << out;
  for (const extmem::probe::RouteInfo& route : extmem::probe::routes()) {
    if (route.group != "gles") continue;
    std::string line = line_of(out, route.row);
    EXPECT_NE(line.find("RESULT " + route.row + " OK glmap[i]=no glgpu[D]=rt"), std::string::npos) << line;
    const std::size_t renderer = line.find("renderer=\"zink");
    EXPECT_NE(renderer, std::string::npos) << line;
    if (renderer != std::string::npos) EXPECT_NE(line.find("llvmpipe", renderer), std::string::npos) << line;
    EXPECT_NE(line.find("accepted=dedicated=off import=reqs(65536) buffer=requested(65536)"), std::string::npos) << line;
  }
  std::FILE* f = std::fopen(json_path.c_str(), "r");
  ASSERT_NE(f, nullptr) << json_path;
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  std::fclose(f);
  std::remove(json_path.c_str());
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << text;
  EXPECT_EQ(doc["gl_driver"]["requested"], "auto");
  EXPECT_EQ(doc["gl_driver"]["served"], "zink");
  EXPECT_EQ(doc["gl_driver"]["renderer_matches"], true);
  EXPECT_EQ(doc["gl_driver"]["env"]["MESA_LOADER_DRIVER_OVERRIDE"], "zink");
  EXPECT_EQ(doc["options"]["gl_driver"], "auto");
}

// Mesa 22.3: llvmpipe imports the lavapipe fd but refuses storage on every rung with
// GL_OUT_OF_MEMORY (a Mesa interop gap); both rows FAIL with the whole ladder listed, each distinct call once.
TEST_P(GlesProbe, LlvmpipeRefusesStorageOnEveryRung) {
  int status = 0;
  std::string out = run("--only-gles --gl-driver=llvmpipe", status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(phase_a_gl_line(out).find("GL driver: llvmpipe (requested llvmpipe): --gl-driver=llvmpipe"),
            std::string::npos) << out;
  for (const extmem::probe::RouteInfo& route : extmem::probe::routes()) {
    if (route.group != "gles") continue;
    const std::string& row = route.row;
    std::string line = line_of(out, row);
    ASSERT_FALSE(line.empty()) << out;
    EXPECT_NE(line.find(std::string("RESULT ") + row + " FAIL glmap[i]=no glgpu[D]=no"), std::string::npos) << line;
    EXPECT_NE(line.find("why: glgpu: glBufferStorageMemEXT (every ladder rung) -> GL_OUT_OF_MEMORY"), std::string::npos)
        << line;
    EXPECT_NE(line.find("renderer=\"llvmpipe ("), std::string::npos) << line;
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

// A user's own MESA_LOADER_DRIVER_OVERRIDE wins over auto and is reported: here it asks
// for llvmpipe's software path, so the row FAILs as on llvmpipe instead of passing on zink.
TEST_P(GlesProbe, AutoLeavesUserOverrideAlone) {
  int status = 0;
  std::string out = run("--only=T1-gles-memobj-fd-same-proc", status,
                        "MESA_LOADER_DRIVER_OVERRIDE=swrast LIBGL_ALWAYS_SOFTWARE=1");
  EXPECT_NE(phase_a_gl_line(out).find("GL driver: system (requested auto): auto: MESA_LOADER_DRIVER_OVERRIDE=swrast is "
                                      "set in the environment, left as it is; env set: none"),
            std::string::npos) << out;
  EXPECT_NE(line_of(out, "T1-gles-memobj-fd-same-proc").find("FAIL"), std::string::npos) << out;
  EXPECT_NE(line_of(out, "T1-gles-memobj-fd-same-proc").find("renderer=\"llvmpipe ("), std::string::npos) << out;
}

// An explicit --gl-driver=zink replaces a user's override (here the software DRI driver, llvmpipe) and says so.
TEST_P(GlesProbe, ExplicitZinkReplacesUserOverride) {
  int status = 0;
  std::string out = run("--only=T1-gles-memobj-fd-cross-proc --gl-driver=zink", status,
                        "MESA_LOADER_DRIVER_OVERRIDE=swrast LIBGL_ALWAYS_SOFTWARE=1");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(phase_a_gl_line(out).find("GL driver: zink (requested zink): --gl-driver=zink; replaces "
                                      "MESA_LOADER_DRIVER_OVERRIDE=swrast from the environment"),
            std::string::npos) << out;
  EXPECT_NE(line_of(out, "T1-gles-memobj-fd-cross-proc").find("OK glmap[i]=no glgpu[D]=rt"), std::string::npos) << out;
}

// A --gl-driver outside the accepted set is a usage error (exit 2) naming the option and the accepted names,
// before any process is started.
TEST_P(GlesProbe, UnknownGlDriverIsUsageError) {
  int status = 0;
  std::string out = run("--gl-driver=softpipe", status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("--gl-driver: \"softpipe\" is not accepted: auto"), std::string::npos) << out;
  for (const char* name : {"system", "zink", "llvmpipe"}) EXPECT_NE(out.find(name), std::string::npos) << out;
  EXPECT_EQ(out.find("RESULT"), std::string::npos) << out;
}

// --no-gles turns the GLES rows into SKIP and the other rows still run.
TEST(GlesProbeGroups, NoGlesSkipsGlesRows) {
  int status = 0;
  std::string out = run_probe("--no-gles", status);
  EXPECT_NE(line_of(out, "T1-gles-memobj-fd-same-proc").find("SKIP why: excluded by --no-gles"), std::string::npos) << out;
  EXPECT_NE(line_of(out, "T1-opaque-fd").find(" OK "), std::string::npos) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
}

}  // namespace
