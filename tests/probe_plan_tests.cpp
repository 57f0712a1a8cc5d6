// Phase A's decisions (src/probe/parent/plan.h) on hand-made phase A facts:
// which rows are answered without starting a process, with which status and
// words, in which order, and which rows --memory-type multiplies.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "probe/parent/plan.h"

namespace {

namespace probe = extmem::probe;
using extmem::RowStatus;

// A device like lavapipe: external memory fd and host import, no dma-buf.
extmem::vk::DeviceInfo lavapipe_like() {
  extmem::vk::DeviceInfo d;
  d.extensions = {{"VK_KHR_external_memory_fd", true},
                  {"VK_EXT_external_memory_dma_buf", false},
                  {"VK_EXT_external_memory_host", true},
                  {"VK_ANDROID_external_memory_android_hardware_buffer", false}};
  return d;
}

const probe::PlannedRow& row(const std::vector<probe::PlannedRow>& plan, const std::string& name) {
  for (const probe::PlannedRow& r : plan)
    if (r.row == name) return r;
  static const probe::PlannedRow none{};
  ADD_FAILURE() << "no planned row " << name;
  return none;
}

const extmem::Result<extmem::cuda::Enumeration> kNoDriver =
    extmem::Error{"dlopen(libcuda.so.1)", extmem::ErrorKind::no_driver, "no CUDA driver", "libcuda.so.1: not found"};

// A missing extension is UNSUPPORTED in the route's own words; a present one leaves the row to run.
TEST(ProbePlan, MissingExtensionIsUnsupportedBeforeAnyProcess) {
  const auto dev = lavapipe_like();
  auto plan = probe::plan_rows({}, {-1}, probe::PhaseAFacts{&dev, &kNoDriver});
  const auto& dma = row(plan, "T1-dma-buf");
  ASSERT_TRUE(dma.decided);
  EXPECT_EQ(dma.decided->status, RowStatus::unsupported);
  EXPECT_EQ(dma.decided->why, "VK_EXT_external_memory_dma_buf not exposed by the device");
  EXPECT_FALSE(row(plan, "T1-opaque-fd").decided);
  EXPECT_FALSE(row(plan, "T3-memfd-cross-process").decided);
}

// No CUDA driver: every CUDA row is SKIP with the loader's step and detail, once CUDA is known.
TEST(ProbePlan, NoCudaDriverIsSkipOnceKnown) {
  const auto dev = lavapipe_like();
  auto plan = probe::plan_rows({}, {-1}, probe::PhaseAFacts{&dev, nullptr});
  EXPECT_FALSE(row(plan, "T1-cuda-vmm-fd").decided);  // CUDA still enumerating: not decided yet
  probe::redecide(plan, {}, probe::PhaseAFacts{&dev, &kNoDriver});
  for (const probe::RouteDef& route : probe::route_table()) {
    if (!route.needs.cuda) continue;
    const std::string name(route.row);
    const auto& r = row(plan, name);
    ASSERT_TRUE(r.decided) << name;
    EXPECT_EQ(r.decided->status, RowStatus::skip) << name;
    if (r.route->skip_reason.empty())
      EXPECT_EQ(r.decided->why, "no CUDA driver (dlopen(libcuda.so.1): libcuda.so.1: not found)") << name;
  }
  EXPECT_FALSE(row(plan, "T1-opaque-fd").decided);
}

// A CUDA library that loads but lacks a symbol is left to the route (it names the symbol).
TEST(ProbePlan, OtherCudaErrorsAreLeftToTheRoute) {
  const auto dev = lavapipe_like();
  const extmem::Result<extmem::cuda::Enumeration> missing_symbol =
      extmem::Error{"dlsym(cuMemCreate)", extmem::ErrorKind::unsupported, "missing symbol", ""};
  auto plan = probe::plan_rows({}, {-1}, probe::PhaseAFacts{&dev, &missing_symbol});
  const auto& r = row(plan, "T1-cuda-vmm-fd");
  EXPECT_EQ(r.decided.has_value(), !r.route->skip_reason.empty());  // only "not built" decides it
}

// Android-only rows are SKIP on Linux; filters come before requirements.
TEST(ProbePlan, PlatformAndFiltersComeFirst) {
  const auto dev = lavapipe_like();
  auto plan = probe::plan_rows({}, {-1}, probe::PhaseAFacts{&dev, &kNoDriver});
  EXPECT_EQ(row(plan, "T0-ahb-blob-transfer").decided->why, std::string(probe::kAndroidOnlyReason));
  probe::ProbeOptions only;
  only.only = {"T3-memfd-cross-process"};
  plan = probe::plan_rows(only, {-1}, probe::PhaseAFacts{&dev, &kNoDriver});
  EXPECT_EQ(row(plan, "T1-dma-buf").decided->why, "not selected by --only");  // not "not exposed"
  EXPECT_FALSE(row(plan, "T3-memfd-cross-process").decided);
  probe::ProbeOptions no_gles;
  no_gles.excluded_groups = {"gles"};
  plan = probe::plan_rows(no_gles, {-1}, probe::PhaseAFacts{&dev, &kNoDriver});
  EXPECT_EQ(row(plan, "T1-gles-memobj-fd-same-proc").decided->why, "excluded by --no-gles");
}

// --memory-type twins: only the rows whose exporter picks its memory, one per type, right after their row.
TEST(ProbePlan, MemoryTypeTwinsFollowTheirRow) {
  const auto dev = lavapipe_like();
  auto plan = probe::plan_rows({}, {-1, 0, 2}, probe::PhaseAFacts{&dev, &kNoDriver});
  std::vector<std::string> names;
  for (const auto& r : plan) names.push_back(r.row);
  auto at = std::find(names.begin(), names.end(), "T1-opaque-fd");
  ASSERT_NE(at, names.end());
  ASSERT_GE(names.end() - at, 3);
  EXPECT_EQ(at[1], "T1-opaque-fd@mt0");
  EXPECT_EQ(at[2], "T1-opaque-fd@mt2");
  EXPECT_EQ(row(plan, "T1-opaque-fd@mt2").memory_type, 2);
  EXPECT_EQ(std::count(names.begin(), names.end(), "T3-memfd-cross-process@mt0"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "T1-opaque-fd-cuda@mt0"), 0);
}

// --fd-transport=both: every row that passes fds is followed by its "@pidfd" twin,
// which is the same route with the pidfd transport and phase A's same decision;
// a row that passes no fd has no twin.
TEST(ProbePlan, PidfdTwinsFollowTheirRowWhenBoth) {
  const auto dev = lavapipe_like();
  probe::ProbeOptions both;
  both.fd_transport = extmem::probe::FdTransportChoice::both;
  auto plan = probe::plan_rows(both, {-1}, probe::PhaseAFacts{&dev, &kNoDriver});
  std::size_t twins = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const probe::PlannedRow& r = plan[i];
    if (r.fd_transport != extmem::os::FdTransport::pidfd) continue;
    ++twins;
    ASSERT_GT(i, 0u);
    const probe::PlannedRow& base = plan[i - 1];
    EXPECT_EQ(r.row, base.row + "@pidfd");
    EXPECT_EQ(base.fd_transport, extmem::os::FdTransport::scm);
    EXPECT_EQ(r.route, base.route);
    EXPECT_TRUE(r.route->passes_fds) << r.row;
    EXPECT_EQ(r.decided.has_value(), base.decided.has_value()) << r.row;
    if (r.decided && base.decided) {
      EXPECT_EQ(r.decided->status, base.decided->status) << r.row;
      EXPECT_EQ(r.decided->why, base.decided->why) << r.row;
    }
  }
  std::size_t passing = 0;
  for (const probe::RouteDef& route : probe::route_table()) passing += route.passes_fds ? 1 : 0;
  EXPECT_EQ(twins, passing);
  EXPECT_EQ(row(plan, "T1-dma-buf@pidfd").decided->why, "VK_EXT_external_memory_dma_buf not exposed by the device");
  for (const probe::PlannedRow& r : plan) EXPECT_NE(r.row, "T1-gles-memobj-fd-same-proc@pidfd");  // single process
}

// --fd-transport=pidfd: a row that passes fds runs only as its "@pidfd" twin; the others run as themselves.
TEST(ProbePlan, PidfdAloneRenamesOnlyRowsThatPassFds) {
  const auto dev = lavapipe_like();
  probe::ProbeOptions pidfd;
  pidfd.fd_transport = extmem::probe::FdTransportChoice::pidfd;
  auto plan = probe::plan_rows(pidfd, {-1}, probe::PhaseAFacts{&dev, &kNoDriver});
  for (const probe::PlannedRow& r : plan) {
    const bool twin = r.fd_transport == extmem::os::FdTransport::pidfd;
    EXPECT_EQ(twin, r.route->passes_fds) << r.row;
    EXPECT_EQ(r.row, std::string(r.route->row) + (twin ? "@pidfd" : "")) << r.row;
  }
  EXPECT_EQ(row(plan, "T1-gles-memobj-fd-same-proc").fd_transport, extmem::os::FdTransport::scm);
}

// The default (scm) plans no "@pidfd" row at all: today's rows, unchanged.
TEST(ProbePlan, ScmPlansNoPidfdRow) {
  const auto dev = lavapipe_like();
  auto plan = probe::plan_rows({}, {-1}, probe::PhaseAFacts{&dev, &kNoDriver});
  for (const probe::PlannedRow& r : plan) {
    EXPECT_EQ(r.fd_transport, extmem::os::FdTransport::scm) << r.row;
    EXPECT_EQ(r.row.find("@pidfd"), std::string::npos) << r.row;
  }
}

// A memory-type twin's pidfd twin carries both suffixes, memory type first.
TEST(ProbePlan, MemoryTypeTwinHasItsPidfdTwin) {
  const auto dev = lavapipe_like();
  probe::ProbeOptions both;
  both.fd_transport = extmem::probe::FdTransportChoice::both;
  auto plan = probe::plan_rows(both, {-1, 2}, probe::PhaseAFacts{&dev, &kNoDriver});
  const auto& r = row(plan, "T1-opaque-fd@mt2@pidfd");
  EXPECT_EQ(r.memory_type, 2);
  EXPECT_EQ(r.fd_transport, extmem::os::FdTransport::pidfd);
}

}  // namespace
