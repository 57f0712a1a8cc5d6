// The CUDA side of the probe without a GPU (issue #4 "Tests"): the dlopen path
// against a missing library and a real library missing one entry point, and
// the CUDA rows' SKIP/UNSUPPORTED verdicts with the exit code unaffected. The
// rows' real verdicts need an NVIDIA GPU: docs/results/nvidia-h200-580.md.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/api.h"
#include "cuda/loader.h"
#include "extmem/core/error.h"
#include "extmem/probe/routes.h"
#include "support/run_shell.h"

namespace {

// The rows that need CUDA, from the route table, and --only naming just them.
std::vector<std::string> cuda_rows() {
  std::vector<std::string> rows;
  for (const extmem::probe::RouteInfo& r : extmem::probe::routes())
    if (r.cuda) rows.push_back(r.row);
  return rows;
}
const std::vector<std::string> kCudaRows = cuda_rows();
const std::string kOnly = [] {
  std::string only = "--only=";
  for (const std::string& row : kCudaRows) only += (only.back() == '=' ? "" : ",") + row;
  return only;
}();
const std::string kMissing = "/nonexistent/extmem-test/libcuda.so.1";

using CmdRun = extmem::test::ShellRun;

// The real binary with `env` (KEY=VALUE ..., or empty) prepended; stdout and stderr together.
CmdRun extmem(const std::string& args, const std::string& env = {}) { return extmem::test::run_extmem(args, env); }

std::string line_of(const std::string& out, const std::string& row) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("RESULT " + row + " [^\n]*")) ? m.str() : "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CudaLoader, MissingLibraryIsNoCudaDriver) {
  auto lib = extmem::cuda::DriverLibrary::open(kMissing);
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().kind, extmem::ErrorKind::no_driver);
  EXPECT_EQ(lib.error().step, "dlopen(" + kMissing + ")");
  EXPECT_EQ(lib.error().code, "no CUDA driver");
  EXPECT_TRUE(has(lib.error().detail, "No such file or directory")) << lib.error().detail;
}

// The fake exports every listed entry point but cuMemExportToShareableHandle.
TEST(CudaLoader, LibraryMissingOneSymbolNamesIt) {
  auto lib = extmem::cuda::DriverLibrary::open(EXTMEM_FAKE_CUDA_LIBRARY);
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().kind, extmem::ErrorKind::unsupported);
  EXPECT_EQ(lib.error().step, "dlsym(cuMemExportToShareableHandle)");
  EXPECT_EQ(lib.error().code, "missing symbol");
  EXPECT_EQ(lib.error().detail, std::string(EXTMEM_FAKE_CUDA_LIBRARY) + " lacks cuMemExportToShareableHandle");
}

TEST(CudaLoader, SymbolListNamesVersionedEntryPointsOnce) {
  const auto& names = extmem::cuda::symbol_names();
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
  // cuda.h maps these plain names to versioned symbols; the table must use the versioned ones.
  for (const char* v : {"cuMemAlloc_v2", "cuMemcpyDtoD_v2", "cuMemsetD32_v2", "cuMemHostRegister_v2", "cuDeviceGetUuid_v2",
                        "cuDevicePrimaryCtxRelease_v2", "cuIpcOpenMemHandle_v2", "cuStreamWaitValue32_v2",
                        "cuMemGetAddressRange_v2"})
    EXPECT_EQ(unique.count(v), 1u) << v;
  for (const char* plain : {"cuMemAlloc", "cuMemcpyDtoD", "cuMemsetD32", "cuMemHostRegister", "cuDeviceGetUuid",
                            "cuIpcOpenMemHandle", "cuStreamWaitValue32", "cuMemGetAddressRange"})
    EXPECT_EQ(unique.count(plain), 0u) << plain;
}

TEST(CudaLoader, LibraryNameOverride) {
  ::unsetenv("EXTMEM_CUDA_LIBRARY");
  EXPECT_EQ(extmem::cuda::driver_library_name(), "libcuda.so.1");
  ::setenv("EXTMEM_CUDA_LIBRARY", "/tmp/x.so", 1);
  EXPECT_EQ(extmem::cuda::driver_library_name(), "/tmp/x.so");
  ::unsetenv("EXTMEM_CUDA_LIBRARY");
}

// Every build has the CUDA rows (the driver API is declared in src/cuda/cuda_api.h):
// --version and phase A say so, and neither says "not built".
TEST(CudaBuild, VersionAndPhaseASayTheRowsAreBuilt) {
  const std::string note = extmem::cuda::build_note();
  EXPECT_TRUE(extmem::cuda::routes_built());
  EXPECT_EQ(note, "CUDA routes built (libcuda.so.1 loaded at run time)");
  CmdRun v = extmem("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_TRUE(has(v.out, note)) << v.out;
  CmdRun p = extmem("probe " + kOnly, "EXTMEM_CUDA_LIBRARY=" + kMissing);
  EXPECT_TRUE(has(p.out, "== phase A: CUDA: " + note)) << p.out;
  EXPECT_FALSE(has(v.out + p.out, "not built")) << v.out << p.out;
}

// No CUDA: every CUDA row is SKIP with the reason, and the exit code is 0.
TEST(CudaRows, SkipWithoutTheDriver) {
  CmdRun r = extmem("probe " + kOnly, "EXTMEM_CUDA_LIBRARY=" + kMissing);
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string reason = "why: no CUDA driver (dlopen(" + kMissing + "):";
  for (const std::string& row : kCudaRows) {
    std::string line = line_of(r.out, row);
    EXPECT_TRUE(has(line, row + " SKIP")) << line;
    EXPECT_TRUE(has(line, reason)) << line;
    // The summary line gives the reason, not the legs that never ran.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\n" + row + " +SKIP +([^\n]*)"))) << r.out;
    EXPECT_FALSE(has(m.str(1), "notrun")) << m.str();
    EXPECT_TRUE(has(m.str(1), reason.substr(5))) << m.str();
  }
}

// T4-image-cuda is one of the CUDA rows (so the two tests around this one cover it), in group t4.
TEST(CudaRows, ImageRowNeedsCudaAndIsInGroupT4) {
  bool found = false;
  for (const extmem::probe::RouteInfo& r : extmem::probe::routes())
    if (r.row == "T4-image-cuda") {
      found = true;
      EXPECT_TRUE(r.cuda);
      EXPECT_EQ(r.group, "t4");
    }
  EXPECT_TRUE(found);
  CmdRun r = extmem("probe --only=T4-image-cuda", "EXTMEM_CUDA_LIBRARY=" + kMissing);
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string line = line_of(r.out, "T4-image-cuda");
  EXPECT_TRUE(has(line, "T4-image-cuda SKIP")) << line;
  EXPECT_TRUE(has(line, "why: no CUDA driver (dlopen(" + kMissing + "):")) << line;
  CmdRun f = extmem("probe --only=T4-image-cuda", std::string("EXTMEM_CUDA_LIBRARY=") + EXTMEM_FAKE_CUDA_LIBRARY);
  EXPECT_EQ(f.code, 0) << f.out;
  const std::string fline = line_of(f.out, "T4-image-cuda");
  EXPECT_TRUE(has(fline, "T4-image-cuda UNSUPPORTED")) << fline;
  EXPECT_TRUE(has(fline, "dlsym(cuMemExportToShareableHandle) -> missing symbol")) << fline;
}

// A driver library missing an entry point: UNSUPPORTED naming it.
TEST(CudaRows, LibraryMissingASymbolIsUnsupportedNamingIt) {
  CmdRun r = extmem("probe " + kOnly, std::string("EXTMEM_CUDA_LIBRARY=") + EXTMEM_FAKE_CUDA_LIBRARY);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const std::string& row : kCudaRows) {
    std::string line = line_of(r.out, row);
    EXPECT_TRUE(has(line, row + " UNSUPPORTED")) << line;
    EXPECT_TRUE(has(line, "dlsym(cuMemExportToShareableHandle) -> missing symbol")) << line;
  }
  EXPECT_TRUE(has(r.out, "no CUDA information: dlsym(cuMemExportToShareableHandle): missing symbol")) << r.out;
}

// cuInit saying there is no usable CUDA (the toolkit's stub library: 34; no device: 100) is
// SKIP, with the code named though the library's cuGetErrorName fails, in phase A and every row.
TEST(CudaRows, CuInitWithoutUsableCudaSkipsNamingTheCode) {
  const std::string lib = EXTMEM_FAKE_CUDA_NOINIT_LIBRARY;
  const std::pair<const char*, const char*> cases[] = {
      {"34", "CUDA_ERROR_STUB_LIBRARY (34): " EXTMEM_FAKE_CUDA_NOINIT_LIBRARY " is the CUDA toolkit's stub library"},
      {"100", "CUDA_ERROR_NO_DEVICE (100): " EXTMEM_FAKE_CUDA_NOINIT_LIBRARY " found no CUDA device"}};
  for (const auto& c : cases) {
    CmdRun r = extmem("probe " + kOnly, "EXTMEM_CUDA_LIBRARY=" + lib + " EXTMEM_FAKE_CUINIT_RESULT=" + c.first);
    EXPECT_EQ(r.code, 0) << r.out;
    const std::string reason = std::string("no CUDA driver (cuInit: ") + c.second;
    EXPECT_TRUE(has(r.out, "no CUDA information: " + reason)) << r.out;
    for (const std::string& row : kCudaRows) {
      const std::string line = line_of(r.out, row);
      EXPECT_TRUE(has(line, row + " SKIP why: " + reason)) << line;
    }
  }
}

// What a route half's open_cuda sees (device_for_vulkan_uuid's cuInit): unsupported "no CUDA
// driver" for the no-usable-CUDA codes, a driver error for others; codes named without cuGetErrorName.
TEST(CudaLoader, CuInitNoUsableCudaIsNoCudaDriver) {
  ::setenv("EXTMEM_CUDA_LIBRARY", EXTMEM_FAKE_CUDA_NOINIT_LIBRARY, 1);
  auto api = extmem::cuda::load();
  ::unsetenv("EXTMEM_CUDA_LIBRARY");
  ASSERT_TRUE(api) << api.error().message();
  ::setenv("EXTMEM_FAKE_CUINIT_RESULT", "34", 1);
  auto dev = extmem::cuda::device_for_vulkan_uuid(**api, "00");
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().kind, extmem::ErrorKind::no_driver);
  EXPECT_EQ(dev.error().code, "no CUDA driver");
  EXPECT_EQ(dev.error().space, extmem::CodeSpace::cu_result);
  EXPECT_EQ(dev.error().native, 34);
  EXPECT_EQ(dev.error().step, "cuInit");
  EXPECT_TRUE(has(dev.error().detail, "CUDA_ERROR_STUB_LIBRARY (34)")) << dev.error().detail;
  ::setenv("EXTMEM_FAKE_CUINIT_RESULT", "2", 1);  // CUDA_ERROR_OUT_OF_MEMORY: a real failure
  dev = extmem::cuda::device_for_vulkan_uuid(**api, "00");
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().kind, extmem::ErrorKind::driver);
  EXPECT_EQ(dev.error().code, "CUDA_ERROR_OUT_OF_MEMORY");
  ::unsetenv("EXTMEM_FAKE_CUINIT_RESULT");
  EXPECT_EQ(extmem::cuda::error_name(**api, static_cast<extmem::CUresult>(12345)), "CUresult 12345");
  EXPECT_EQ(extmem::cuda::error_name(**api, extmem::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH");
}

// The issue #19 rows are CUDA rows of group t1, and without a driver they SKIP with the reason.
TEST(CudaRows, IpcAndMultichunkRowsSkipWithoutTheDriver) {
  // routes() returns a vector by value: keep it, the pointer below points into it.
  const std::vector<extmem::probe::RouteInfo> all = extmem::probe::routes();
  for (const char* row : {"T1-cuda-ipc", "T1-cuda-vmm-multichunk"}) {
    const extmem::probe::RouteInfo* info = nullptr;
    for (const extmem::probe::RouteInfo& r : all)
      if (r.row == row) info = &r;
    ASSERT_NE(info, nullptr) << row;
    EXPECT_TRUE(info->cuda) << row;
    EXPECT_EQ(info->group, "t1") << row;
  }
  CmdRun r = extmem("probe --only=T1-cuda-ipc,T1-cuda-vmm-multichunk", "EXTMEM_CUDA_LIBRARY=" + kMissing);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* row : {"T1-cuda-ipc", "T1-cuda-vmm-multichunk"}) {
    const std::string line = line_of(r.out, row);
    EXPECT_TRUE(has(line, std::string(row) + " SKIP why: no CUDA driver (dlopen(" + kMissing + "):")) << line;
  }
}

// The multichunk negative control: a peer that maps only the first chunk is never OK. With a
// CUDA driver it must FAIL at chunk boundary 1; without one (lavapipe, CI) the row SKIPs with
// the reason and the test says the control could not run here.
TEST(CudaRows, MultichunkPeerMappingOnlyTheFirstChunkIsNotOk) {
  CmdRun r = extmem("probe --only=T1-cuda-vmm-multichunk",
                    "'EXTMEM_TEST_FAULT=T1-cuda-vmm-multichunk:client:cuMemMap:firstchunk'");
  const std::string line = line_of(r.out, "T1-cuda-vmm-multichunk");
  ASSERT_FALSE(line.empty()) << r.out;
  EXPECT_FALSE(has(line, "T1-cuda-vmm-multichunk OK")) << line;
  if (has(line, "T1-cuda-vmm-multichunk SKIP")) {
    EXPECT_TRUE(has(line, "why: no CUDA driver")) << line;
    GTEST_SKIP() << "no CUDA driver here: the control runs on a GPU machine (" << line << ")";
  }
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(line, "T1-cuda-vmm-multichunk FAIL")) << line;
  EXPECT_TRUE(has(line, "chunk boundary 1")) << line;
}

// --json carries the CUDA section of phase A.
TEST(CudaRows, JsonHasCudaSection) {
  char dir[] = "/tmp/extmem-cuda-json-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/r.json";
  CmdRun r = extmem("probe " + kOnly + " --json=" + path, "EXTMEM_CUDA_LIBRARY=" + kMissing);
  EXPECT_EQ(r.code, 0) << r.out;
  FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  nlohmann::json j = nlohmann::json::parse(f);
  std::fclose(f);
  std::remove(path.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(j.contains("cuda"));
  EXPECT_EQ(j["cuda"]["built"], extmem::cuda::routes_built());
  EXPECT_EQ(j["cuda"]["build_note"], extmem::cuda::build_note());
  EXPECT_TRUE(j["cuda"].contains("error"));
}

}  // namespace
