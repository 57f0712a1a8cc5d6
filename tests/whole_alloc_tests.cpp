// The whole-allocation check (src/probe/worker/whole_alloc.h, docs/probe.md,
// "The whole allocation"): the stamp plan and its bound, the sweep on real
// shared and private mappings, and the negative control — an "import" that
// aliases only the first half of a shared mapping and is a private copy beyond
// it — both on the sweep itself and through the probe's own route.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <regex>
#include <set>
#include <string>

#include "extmem/os/fd.h"
#include "probe/worker/gpu_access.h"
#include "probe/worker/route_util.h"
#include "probe/worker/whole_alloc.h"
#include "support/run_shell.h"
#include "support/temp_files.h"

namespace {

namespace whole = extmem::probe::whole;
using extmem::os::Mapping;

constexpr std::size_t kSize = 1 << 20;  // 256 pages

struct Shared {
  extmem::os::UniqueFd fd;
  Mapping a, b;  // two MAP_SHARED mappings of one memfd
};

Shared shared_pair(std::size_t size) {
  Shared s;
  auto fd = extmem::os::create_memfd("whole-alloc-test", size);
  EXPECT_TRUE(fd) << fd.error().message();
  s.fd = std::move(*fd);
  auto a = Mapping::map(s.fd.get(), size, MAP_SHARED);
  auto b = Mapping::map(s.fd.get(), size, MAP_SHARED);
  EXPECT_TRUE(a && b);
  s.a = std::move(*a);
  s.b = std::move(*b);
  for (std::size_t i = 0; i < size; ++i) s.a.data()[i] = static_cast<std::byte>(i * 7 + 3);
  return s;
}

// Up to 1 GiB every page gets a stamp, each in its own page.
TEST(WholeAllocPlan, EveryPageUpToTheBound) {
  whole::Plan p = whole::plan_for(kSize);
  EXPECT_EQ(p.stride_pages, 1u);
  ASSERT_EQ(p.count, kSize / whole::kPage);
  std::set<std::size_t> pages;
  for (std::size_t i = 0; i < p.count; ++i) {
    EXPECT_EQ(p.offset(i) / whole::kPage, i);
    EXPECT_EQ(p.offset(i) % 8, 0u);
    pages.insert(p.page_of(i));
  }
  EXPECT_EQ(pages.size(), p.count);
  EXPECT_EQ(whole::plan_for(std::size_t{1} << 30).count, whole::kMaxStampedPages);
}

// Above 1 GiB every Nth page, at most kMaxStampedPages + 1 stamps, and the last page always.
TEST(WholeAllocPlan, StrideAboveTheBoundKeepsTheLastPage) {
  const std::size_t size = (std::size_t{3} << 30) + 5 * whole::kPage;
  whole::Plan p = whole::plan_for(size);
  EXPECT_EQ(p.stride_pages, 4u);
  EXPECT_LE(p.count, whole::kMaxStampedPages + 1);
  EXPECT_EQ(p.page_of(p.count - 1), size / whole::kPage - 1);
  EXPECT_EQ(p.page_of(1), 4u);
  EXPECT_LT(p.offset(p.count - 1) + 8, size + 1);
}

// Two shared mappings of one memfd: every stamp crosses both ways, and both keep their bytes.
TEST(WholeAllocSweep, SharedMappingsPass) {
  Shared s = shared_pair(kSize);
  std::vector<std::byte> before(s.a.data(), s.a.data() + kSize);
  whole::LocalFar far(s.b.bytes(), whole::plan_for(kSize));
  auto r = whole::sweep(s.a.bytes(), whole::plan_for(kSize), far.as_far(), 1);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->unaliased_at) << r->text();
  EXPECT_EQ(r->stamps, kSize / whole::kPage);
  EXPECT_EQ(std::memcmp(before.data(), s.a.data(), kSize), 0);
}

// A full private copy is caught at the first stamp.
TEST(WholeAllocSweep, PrivateCopyFailsAtFirstPage) {
  Shared s = shared_pair(kSize);
  auto copy = Mapping::anonymous(kSize);
  ASSERT_TRUE(copy);
  std::memcpy(copy->data(), s.a.data(), kSize);
  whole::LocalFar far(copy->bytes(), whole::plan_for(kSize));
  auto r = whole::sweep(s.a.bytes(), whole::plan_for(kSize), far.as_far(), 2);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->unaliased_at);
  EXPECT_EQ(*r->unaliased_at, whole::plan_for(kSize).offset(0));
}

// The negative control: aliases the first half, a private copy beyond. The sweep
// finds the first page of the copy in both directions, and leaves both views' bytes
// as they were (the shared half through either, the private half in each).
TEST(WholeAllocSweep, PartialAliasFailsAtTheFirstUnsharedPage) {
  Shared s = shared_pair(kSize);
  auto partial = extmem::probe::partial_alias_copy(s.a, kSize / 2);
  ASSERT_TRUE(partial) << partial.error().message();
  // The construction is what it claims: shared below half, private at and above it.
  s.a.data()[0] = std::byte{0x5a};
  EXPECT_EQ(partial->data()[0], std::byte{0x5a});
  s.a.data()[kSize / 2] = std::byte{0xa5};
  EXPECT_NE(partial->data()[kSize / 2], std::byte{0xa5});

  const whole::Plan plan = whole::plan_for(kSize);
  const std::size_t first_private = plan.offset(kSize / 2 / whole::kPage);
  std::vector<std::byte> a_before(s.a.data(), s.a.data() + kSize);
  std::vector<std::byte> p_before(partial->data(), partial->data() + kSize);
  for (bool partial_is_near : {true, false}) {
    Mapping& near = partial_is_near ? *partial : s.a;
    Mapping& other = partial_is_near ? s.a : *partial;
    whole::LocalFar far(other.bytes(), plan);
    auto r = whole::sweep(near.bytes(), plan, far.as_far(), 3);
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->unaliased_at) << "partial is near: " << partial_is_near;
    EXPECT_EQ(*r->unaliased_at, first_private);
    EXPECT_EQ(r->direction, whole::Direction::near_to_far);
    EXPECT_NE(r->text().find("unaliasedAt=" + std::to_string(first_private)), std::string::npos) << r->text();
  }
  EXPECT_EQ(std::memcmp(a_before.data(), s.a.data(), kSize), 0);
  EXPECT_EQ(std::memcmp(p_before.data(), partial->data(), kSize), 0);
}

// A far side that does not see the last page only (a view one page short) is named at that page.
TEST(WholeAllocSweep, ShortFarViewFailsAtItsEnd) {
  Shared s = shared_pair(kSize);
  const whole::Plan plan = whole::plan_for(kSize);
  whole::LocalFar far(s.b.bytes().subspan(0, kSize - whole::kPage), plan);
  auto r = whole::sweep(s.a.bytes(), plan, far.as_far(), 4);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->unaliased_at);
  EXPECT_EQ(*r->unaliased_at, plan.offset(plan.count - 1));
}

// A far side's error ends the sweep with that error unchanged, and this side's bytes are restored.
TEST(WholeAllocSweep, FarErrorIsReturnedAndNearRestored) {
  Shared s = shared_pair(kSize);
  std::vector<std::byte> before(s.a.data(), s.a.data() + kSize);
  whole::Far far{[](std::uint64_t) -> extmem::Status { return {}; }, []() -> extmem::Status { return {}; },
                 [](std::uint64_t) -> extmem::Result<std::optional<std::size_t>> {
                   return extmem::os_error("peer read", EPIPE);
                 }};
  auto r = whole::sweep(s.a.bytes(), whole::plan_for(kSize), far, 5);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().step, "peer read");
  EXPECT_EQ(std::memcmp(before.data(), s.a.data(), kSize), 0);
}

// The GPU form's flow (gpu_sweep, shared by Vulkan, GL and CUDA) with a "GPU" that
// copies words through a CPU view: here `near` stands in for what the GPU reaches.
extmem::probe::GpuWords cpu_words(Mapping& near, const whole::Plan& plan) {
  extmem::probe::GpuWords w;
  w.gather = [&near, plan](std::span<std::uint64_t> out) -> extmem::Status {
    for (std::size_t i = 0; i < plan.count; ++i) std::memcpy(&out[i], near.data() + plan.offset(i), sizeof out[i]);
    return {};
  };
  w.scatter = [&near, plan](std::span<const std::uint64_t> in) -> extmem::Status {
    for (std::size_t i = 0; i < plan.count; ++i) std::memcpy(near.data() + plan.offset(i), &in[i], sizeof in[i]);
    return {};
  };
  return w;
}

extmem::Leg rt_leg() {
  extmem::Leg leg{"gpu", true};
  leg.attempted = leg.read_ok = leg.write_ok = true;
  return leg;
}

// A GPU whose reach is the same memory as the far side: the leg stays rt, both views unchanged.
TEST(WholeAllocGpuSweep, SharedMemoryStaysRoundTrip) {
  Shared s = shared_pair(kSize);
  std::vector<std::byte> before(s.a.data(), s.a.data() + kSize);
  const whole::Plan plan = whole::plan_for(kSize);
  whole::LocalFar far(s.b.bytes(), plan);
  extmem::Leg leg = rt_leg();
  extmem::probe::gpu_sweep({}, "test", plan, cpu_words(s.a, plan), far.as_far(), leg);
  EXPECT_TRUE(leg.read_ok && leg.write_ok) << leg.failed_step << " " << leg.note;
  EXPECT_EQ(std::memcmp(before.data(), s.a.data(), kSize), 0);
}

// The negative control on the GPU form: a GPU that reaches a half-aliased copy misses the
// far side's stamp at the first private page; read-ok is cleared and the note names the offset.
TEST(WholeAllocGpuSweep, PartialAliasClearsReadOk) {
  Shared s = shared_pair(kSize);
  auto partial = extmem::probe::partial_alias_copy(s.a, kSize / 2);
  ASSERT_TRUE(partial) << partial.error().message();
  const whole::Plan plan = whole::plan_for(kSize);
  const std::size_t first_private = plan.offset(kSize / 2 / whole::kPage);
  std::vector<std::byte> before(s.a.data(), s.a.data() + kSize);
  whole::LocalFar far(s.a.bytes(), plan);
  extmem::Leg leg = rt_leg();
  extmem::probe::gpu_sweep({}, "test", plan, cpu_words(*partial, plan), far.as_far(), leg);
  EXPECT_FALSE(leg.read_ok);
  EXPECT_TRUE(leg.write_ok);
  EXPECT_EQ(leg.failed_step, "whole-allocation sweep");
  EXPECT_NE(leg.note.find("unaliasedAt=" + std::to_string(first_private)), std::string::npos) << leg.note;
  EXPECT_EQ(std::memcmp(before.data(), s.a.data(), kSize), 0) << "the far side's words are put back";
}

// Write direction alone: a GPU whose gather sees the far side's stamps (shared) but whose
// writes beyond the middle land in a private copy clears write-ok, and restores its own words.
TEST(WholeAllocGpuSweep, WritesNotSeenClearWriteOk) {
  Shared s = shared_pair(kSize);
  auto partial = extmem::probe::partial_alias_copy(s.a, kSize / 2);
  ASSERT_TRUE(partial) << partial.error().message();
  const whole::Plan plan = whole::plan_for(kSize);
  whole::LocalFar far(s.b.bytes(), plan);
  extmem::probe::GpuWords w = cpu_words(s.a, plan);
  w.scatter = cpu_words(*partial, plan).scatter;
  std::vector<std::byte> before(partial->data(), partial->data() + kSize);
  extmem::Leg leg = rt_leg();
  extmem::probe::gpu_sweep({}, "test", plan, w, far.as_far(), leg);
  EXPECT_TRUE(leg.read_ok);
  EXPECT_FALSE(leg.write_ok);
  EXPECT_NE(leg.note.find("unaliasedAt=" + std::to_string(plan.offset(kSize / 2 / whole::kPage))), std::string::npos)
      << leg.note;
}

// A GPU error is the leg's failing step and code, and clears the direction's flag.
TEST(WholeAllocGpuSweep, GpuErrorIsTheFailingStep) {
  Shared s = shared_pair(kSize);
  const whole::Plan plan = whole::plan_for(kSize);
  whole::LocalFar far(s.b.bytes(), plan);
  extmem::probe::GpuWords w = cpu_words(s.a, plan);
  w.gather = [](std::span<std::uint64_t>) -> extmem::Status {
    return extmem::Error{"cuMemcpyDtoHAsync", extmem::ErrorKind::driver, "CUDA_ERROR_ILLEGAL_ADDRESS", {}};
  };
  extmem::Leg leg = rt_leg();
  extmem::probe::gpu_sweep({}, "test", plan, w, far.as_far(), leg);
  EXPECT_FALSE(leg.read_ok);
  EXPECT_EQ(leg.failed_step, "cuMemcpyDtoHAsync");
  EXPECT_EQ(leg.code, "CUDA_ERROR_ILLEGAL_ADDRESS");
}

std::string line_of(const std::string& out, const std::string& row) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("RESULT " + row + " [^\n]*")) ? m.str() : "";
}

// Through the probe: the route's mapping replaced by the half-aliased copy passes
// the window compares (the window is the first 32 KiB) but is not OK, and the
// detail names the first unaliased offset, the middle of the allocation.
TEST(WholeAllocProbe, PartialAliasImportIsNotOk) {
  auto r = extmem::test::run_extmem("probe --only=T3-memfd-cross-process --size=65536",
                                    "EXTMEM_TEST_FAULT=T3-memfd-cross-process:server:mmap:partialalias");
  const std::string line = line_of(r.out, "T3-memfd-cross-process");
  EXPECT_NE(line.find("T3-memfd-cross-process FAIL mmap[D]=read-only"), std::string::npos) << r.out;
  EXPECT_NE(line.find("unaliasedAt=32768"), std::string::npos) << line;
  EXPECT_EQ(line.find("region"), std::string::npos) << "the window compares should pass: " << line;
  EXPECT_EQ(r.code, 1) << r.out;
}

// The same control at 1 MiB: the window covers 32 KiB of the shared half, so the
// only evidence is the whole-allocation check, at offset 524288.
TEST(WholeAllocProbe, PartialAliasOfALargerAllocation) {
  auto r = extmem::test::run_extmem("probe --only=T3-memfd-cross-process --size=1048576",
                                    "EXTMEM_TEST_FAULT=T3-memfd-cross-process:server:mmap:partialalias");
  const std::string line = line_of(r.out, "T3-memfd-cross-process");
  EXPECT_NE(line.find("FAIL mmap[D]=read-only"), std::string::npos) << r.out;
  EXPECT_NE(line.find("unaliasedAt=524288"), std::string::npos) << line;
}

// Without the fault the same row is OK at the same sizes: the check does not fire on a real alias.
TEST(WholeAllocProbe, RealAliasIsOk) {
  auto r = extmem::test::run_extmem("probe --only=T3-memfd-cross-process,T1-opaque-fd,T3-external-memory-host "
                                    "--size=1048576");
  EXPECT_NE(line_of(r.out, "T3-memfd-cross-process").find(" OK mmap[D]=rt"), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "T1-opaque-fd").find(" OK "), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "T3-external-memory-host").find(" OK "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("unaliasedAt"), std::string::npos) << r.out;
}

// The GL leg over 1 MiB on zink: both T1-gles rows stay OK and report a stamp on every page.
TEST(WholeAllocProbe, GlGpuLegCoversEveryPage) {
  auto r = extmem::test::run_extmem("probe --only=T1-gles-memobj-fd-same-proc,T1-gles-memobj-fd-cross-proc "
                                    "--size=1048576");
  for (const char* row : {"T1-gles-memobj-fd-same-proc", "T1-gles-memobj-fd-cross-proc"}) {
    const std::string line = line_of(r.out, row);
    EXPECT_NE(line.find(" OK "), std::string::npos) << r.out;
    EXPECT_NE(line.find("glgpu[D]=rt"), std::string::npos) << line;
    EXPECT_NE(line.find("glgpu whole-allocation: 256 of 256 pages stamped (every page), both directions"),
              std::string::npos) << line;
  }
  EXPECT_EQ(r.out.find("unaliasedAt"), std::string::npos) << r.out;
}

// At 16 MiB (4096 stamps) the Vulkan and GL GPU legs move their words with the sweep shaders
// (one dispatch a pass, probe/worker/sweep_shader.h and its GL twin) instead of one copy per
// stamp: every row stays OK and still reports a stamp on every page. The shaders' own
// correctness, word by word, is tests/sweep_shader_tests.cpp.
TEST(WholeAllocProbe, ShaderSweepAtSixteenMiBCoversEveryPage) {
  extmem::test::TempDir dir;
  const std::string trace = dir.file("trace");
  auto r = extmem::test::run_extmem("probe --only=T1-opaque-fd,T1-gles-memobj-fd-cross-proc --size=16777216",
                                    "EXTMEM_PROBE_TRACE=" + trace);
  const std::string steps = extmem::test::slurp(trace);
  EXPECT_NE(steps.find("whole-allocation sweep through gpu: one dispatch a pass (sweep shader)"), std::string::npos)
      << steps;
  EXPECT_NE(steps.find("whole-allocation sweep through glgpu: one dispatch a pass (sweep shader)"), std::string::npos)
      << steps;
  const std::string vk = line_of(r.out, "T1-opaque-fd");
  EXPECT_NE(vk.find(" OK "), std::string::npos) << r.out;
  EXPECT_NE(vk.find("gpu[D]=rt"), std::string::npos) << vk;
  const std::string gl = line_of(r.out, "T1-gles-memobj-fd-cross-proc");
  EXPECT_NE(gl.find(" OK "), std::string::npos) << r.out;
  EXPECT_NE(gl.find("glgpu whole-allocation: 4096 of 4096 pages stamped (every page), both directions"),
            std::string::npos) << gl;
  EXPECT_EQ(r.out.find("unaliasedAt"), std::string::npos) << r.out;
  EXPECT_EQ(r.code, 0) << r.out;
}

// The GL negative control: the sweep's GL copies reach a private GL buffer from the middle of
// the allocation on; the window round-trips, the row is not OK, and the detail names the first
// stamp of the private half (page 128, word 384: 524288 + 3072).
TEST(WholeAllocProbe, GlPartialAliasIsNotOk) {
  auto r = extmem::test::run_extmem(
      "probe --only=T1-gles-memobj-fd-cross-proc --size=1048576",
      "'EXTMEM_TEST_FAULT=T1-gles-memobj-fd-cross-proc:client:whole-allocation sweep through glgpu:partialalias'");
  const std::string line = line_of(r.out, "T1-gles-memobj-fd-cross-proc");
  EXPECT_NE(line.find("FAIL glmap[i]=no glgpu[D]=write-only"), std::string::npos) << r.out;
  EXPECT_NE(line.find("unaliasedAt=527360 (the other side's write there was not seen by this GL GPU)"),
            std::string::npos) << line;
  EXPECT_EQ(r.code, 1) << r.out;
}

}  // namespace

