// The T5 (UCX) rows (issue #32): UCX's endpoint and context descriptions read
// as UCX 1.13 prints them (UcxInfo), the path check in every case (UcxPath),
// and the rows run on this machine's UCX with their controls (UcxRows): OK by
// default over a shared-memory transport (both run modes and the workers'
// hygiene: probe_worker_tests.cpp, every row), UCX_TLS=tcp caught as a
// fall-back, tcp accepted when --expect-transport=tcp asks for it, a corrupted
// byte and a stale rkey_ptr mapping FAIL, and without UCX the rows SKIP and
// the others run as before.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "probe/routes/t5_ucx/path.h"
#include "support/run_shell.h"
#include "support/temp_files.h"
#include "ucx/info.h"
#include "ucx/ucx.h"

namespace {

using nlohmann::json;
using extmem::probe::t5::PathFacts;

// ucp_ep_print_info of UCX 1.13.1 (Debian bookworm) between two processes of one host, verbatim.
constexpr const char* kShmEndpoint = R"(#
# UCP endpoint 
#
#               peer: <no debug data>
#                 lane[0]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] am am_bw#0
#                 lane[1]:  4:posix/memory.0 md[3]          -> md[3]/posix/sysdev[255]
#
#                  put[0]: 0..<short>..4294967296..<bcopy>..(inf)
#                  get[0]: 0..<bcopy>..(inf)
#                  put[1]: 0..<short>..4294967296..<bcopy>..(inf)
#                  get[1]: 0..<bcopy>..(inf)
#
#                  rma_bw: mds #
)";
// The same with UCX_TLS=tcp: no lane does put/get itself, RMA goes over active messages.
constexpr const char* kTcpEndpoint = R"(#
# UCP endpoint 
#
#               peer: <no debug data>
#                 lane[0]:  0:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] am am_bw#0 wireup
#
#
#                  rma_bw: mds #
)";
// ucp_context_print_info's resources, 1.13.1.
constexpr const char* kContext = R"(#
# UCP context
#
#            md 0  :  component 0  self 
#            md 1  :  component 1  tcp 
#
#      resource 0  :  md 0  dev 0  flags -- self/memory0
#      resource 1  :  md 1  dev 1  flags -- tcp/lo
#      resource 2  :  md 1  dev 2  flags -- tcp/eth0
#      resource 3  :  md 2  dev 3  flags -- sysv/memory
#      resource 4  :  md 3  dev 3  flags -- posix/memory
#      resource 5  :  md 4  dev 3  flags -- cma/memory
#
)";

TEST(UcxInfo, ShmEndpointLanesAndRmaTransports) {
  const auto info = extmem::ucx::parse_endpoint_info(kShmEndpoint);
  ASSERT_EQ(info.lanes.size(), 2u);
  EXPECT_EQ(info.lanes[0].transport, "sysv");
  EXPECT_EQ(info.lanes[0].device, "memory.0");
  EXPECT_TRUE(info.lanes[0].am);
  EXPECT_TRUE(info.lanes[0].rma);
  EXPECT_EQ(info.lanes[1].transport, "posix");
  EXPECT_FALSE(info.lanes[1].am);
  EXPECT_TRUE(info.lanes[1].rma);
  EXPECT_FALSE(info.rma_emulated());
  EXPECT_EQ(info.rma_transports(), (std::vector<std::string>{"sysv", "posix"}));
  EXPECT_EQ(info.raw.find("lane[0]: 3:sysv/memory.0 md[2] -> md[2]/sysv/sysdev[255] am am_bw#0; lane[1]:"), 0u)
      << info.raw;
  EXPECT_NE(info.raw.find("get[1]: 0..<bcopy>..(inf)"), std::string::npos) << info.raw;
}

TEST(UcxInfo, TcpEndpointEmulatesRmaOverActiveMessages) {
  const auto info = extmem::ucx::parse_endpoint_info(kTcpEndpoint);
  ASSERT_EQ(info.lanes.size(), 1u);
  EXPECT_EQ(info.lanes[0].transport, "tcp");
  EXPECT_EQ(info.lanes[0].device, "lo.0");
  EXPECT_TRUE(info.lanes[0].am);
  EXPECT_FALSE(info.lanes[0].rma);
  EXPECT_TRUE(info.rma_emulated());
  EXPECT_EQ(info.rma_transports(), (std::vector<std::string>{"tcp"}));
}

TEST(UcxInfo, ContextTransportsAndGarbage) {
  EXPECT_EQ(extmem::ucx::context_transports(kContext),
            (std::vector<std::string>{"self", "tcp", "sysv", "posix", "cma"}));
  EXPECT_TRUE(extmem::ucx::parse_endpoint_info("lane[x]: nonsense\nput[: 1\n\n#").lanes.empty());
  EXPECT_TRUE(extmem::ucx::context_transports("resource 0 : no dashes").empty());
  EXPECT_TRUE(extmem::ucx::is_shared_memory("cma"));
  EXPECT_FALSE(extmem::ucx::is_shared_memory("tcp"));
  EXPECT_FALSE(extmem::ucx::is_shared_memory("self"));
}

TEST(UcxPath, SharedMemoryIsTheDefaultExpectation) {
  PathFacts f{.took = {"sysv", "posix"}};
  EXPECT_FALSE(extmem::probe::t5::path_failure(f));
  EXPECT_EQ(extmem::probe::t5::path_note(f), "transport=sysv,posix (expected shm)");
  f.took = {};
  EXPECT_TRUE(extmem::probe::t5::path_failure(f)) << "no transport named is never as expected";
}

TEST(UcxPath, TcpWhenSharedMemoryWasAvailableIsAFallBack) {
  PathFacts f{.took = {"tcp"}, .host_shm = {"sysv", "posix", "cma"}, .lanes = "lane[0]: 0:tcp/lo.0"};
  auto why = extmem::probe::t5::path_failure(f);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->find("UCX fell back to tcp: UCX chose tcp although sysv,posix,cma were enabled"), 0u) << *why;
  EXPECT_NE(why->find("lane[0]: 0:tcp/lo.0"), std::string::npos) << *why;
  f.ucx_tls = "tcp";
  why = extmem::probe::t5::path_failure(f);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->find("UCX fell back to tcp: UCX_TLS=tcp in the environment leaves out sysv,posix,cma"), 0u) << *why;
  f.host_shm = {};
  why = extmem::probe::t5::path_failure(f);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("no shared-memory transport on this host"), std::string::npos) << *why;
  f.took = {"tcp", "sysv"};  // a mix is not all shared memory
  EXPECT_TRUE(extmem::probe::t5::path_failure(f));
}

TEST(UcxPath, ExpectedTransportIsExact) {
  PathFacts f{.took = {"tcp"}, .expect = "tcp", .ucx_tls = "tcp"};
  EXPECT_FALSE(extmem::probe::t5::path_failure(f));
  EXPECT_EQ(extmem::probe::t5::path_note(f), "transport=tcp (expected tcp)");
  f.took = {"sysv"};
  auto why = extmem::probe::t5::path_failure(f);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->find("UCX took sysv, --expect-transport=tcp was asked for"), 0u) << *why;
  f.expect = "sysv";
  EXPECT_FALSE(extmem::probe::t5::path_failure(f));
  f.took = {"sysv", "posix"};
  EXPECT_TRUE(extmem::probe::t5::path_failure(f));
}

// ---------------------------------------------------------------- the rows --

json run_json(const std::string& args, const std::string& env, extmem::test::ShellRun& r) {
  extmem::test::TempDir dir;
  r = extmem::test::run_extmem("probe --no-gles " + args + " --json=" + dir.file("run.json"), env);
  json doc = json::parse(extmem::test::slurp(dir.file("run.json")), nullptr, false);
  return doc.is_discarded() ? json() : doc;
}

json row_of(const json& doc, const std::string& row) {
  for (const json& r : doc.value("rows", json::array()))
    if (r.value("row", "") == row) return r;
  return json();
}

bool has_ucx() { return static_cast<bool>(extmem::ucx::version()); }

#define REQUIRE_UCX()                                                                                       \
  if (!has_ucx()) GTEST_SKIP() << "no libucp.so.0 here (scripts/deps.sh installs libucx-dev)"

TEST(UcxRows, DefaultRunIsOkOverSharedMemory) {
  REQUIRE_UCX();
  extmem::test::ShellRun r;
  const json doc = run_json("--only-t5", "", r);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("RESULT T5-ucx-rkey-ptr OK rkeyptr[D]=rt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RESULT T5-ucx-rma OK rma[D]=rt"), std::string::npos) << r.out;
  for (const char* name : {"T5-ucx-rkey-ptr", "T5-ucx-rma"}) {
    const json row = row_of(doc, name);
    ASSERT_TRUE(row.is_object()) << doc.dump();
    EXPECT_EQ(row["status"], "OK") << row.dump();
    EXPECT_NE(row.dump().find("(expected shm)"), std::string::npos) << row.dump();
    EXPECT_EQ(row.dump().find("tcp"), std::string::npos) << "a shared-memory path names no tcp: " << row.dump();
  }
  EXPECT_NE(r.out.find("mapping=/"), std::string::npos) << "rkey_ptr names the segment it mapped: " << r.out;
  // Both run modes (warm workers, --isolate=route) and the workers' hygiene: probe_worker_tests.cpp, every row.
}

TEST(UcxRows, UcxTlsTcpIsCaughtAsAFallBack) {
  REQUIRE_UCX();
  auto r = extmem::test::run_extmem("probe --no-gles --only-t5", "UCX_TLS=tcp");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("RESULT T5-ucx-rma FAIL rma[D]=rt why: UCX fell back to tcp: UCX_TLS=tcp in the environment"),
            std::string::npos)
      << "the bytes crossed (rt) and the path still fails the row: " << r.out;
  EXPECT_NE(r.out.find("RESULT T5-ucx-rkey-ptr FAIL rkeyptr[D]=notrun why: UCX fell back to tcp"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("tcp/lo"), std::string::npos) << "UCX's own lane is printed: " << r.out;
}

TEST(UcxRows, TcpAskedForIsOk) {
  REQUIRE_UCX();
  auto r = extmem::test::run_extmem("probe --no-gles --only-t5 --expect-transport=tcp", "UCX_TLS=tcp");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("RESULT T5-ucx-rma OK rma[D]=rt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("transport=tcp (expected tcp)"), std::string::npos) << r.out;
  // tcp maps nothing: UCX's status verbatim, and the transport it chose.
  EXPECT_NE(r.out.find("RESULT T5-ucx-rkey-ptr UNSUPPORTED rkeyptr[D]=notrun why: ucp_rkey_ptr -> "
                       "UCS_ERR_UNREACHABLE (Destination is unreachable); UCX's transports on this endpoint: tcp"),
            std::string::npos)
      << r.out;
  // Expecting tcp where UCX takes shared memory is a wrong path too.
  auto shm = extmem::test::run_extmem("probe --no-gles --only=T5-ucx-rma --expect-transport=tcp");
  EXPECT_EQ(shm.code, 1) << shm.out;
  EXPECT_NE(shm.out.find("--expect-transport=tcp was asked for"), std::string::npos) << shm.out;
}

TEST(UcxRows, CorruptedBytesFail) {
  REQUIRE_UCX();
  auto list = extmem::test::run_extmem("probe --list-routes=faults");
  EXPECT_NE(list.out.find("| `T5-ucx-rma` | `corrupt` | server |"), std::string::npos) << list.out;
  auto rma = extmem::test::run_extmem("probe --no-gles --only=T5-ucx-rma",
                                      "EXTMEM_TEST_FAULT=T5-ucx-rma:server:ucp_get_nbx:corrupt");
  EXPECT_EQ(rma.code, 1) << rma.out;
  EXPECT_NE(rma.out.find("RESULT T5-ucx-rma FAIL rma[D]=write-only"), std::string::npos) << rma.out;
  EXPECT_NE(rma.out.find("region A differs at +256"), std::string::npos) << rma.out;
  auto ptr = extmem::test::run_extmem("probe --no-gles --only=T5-ucx-rkey-ptr",
                                      "EXTMEM_TEST_FAULT=T5-ucx-rkey-ptr:server:ucp_rkey_ptr:corrupt");
  EXPECT_EQ(ptr.code, 1) << ptr.out;
  EXPECT_NE(ptr.out.find("RESULT T5-ucx-rkey-ptr FAIL"), std::string::npos) << ptr.out;
  EXPECT_NE(ptr.out.find("region A differs at +256"), std::string::npos) << ptr.out;
}

TEST(UcxRows, StaleRkeyPtrMappingDoesNotPass) {
  REQUIRE_UCX();
  auto r = extmem::test::run_extmem("probe --no-gles --only=T5-ucx-rkey-ptr",
                                    "'EXTMEM_TEST_FAULT=T5-ucx-rkey-ptr:client:ucp_mem_map(ALLOCATE):staleremap'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("RESULT T5-ucx-rkey-ptr FAIL rkeyptr[D]=read-only"), std::string::npos)
      << "the stale copy still holds region A; region B never reaches the owner: " << r.out;
  EXPECT_NE(r.out.find("peer sees region B wrong"), std::string::npos) << r.out;
}

TEST(UcxRows, WithoutUcxTheRowsSkipAndTheRestRunsAsBefore) {
  const std::string rows = "--only=T3-memfd-cross-process,T5-ucx-rkey-ptr,T5-ucx-rma";
  extmem::test::ShellRun r;
  const json doc = run_json(rows, "EXTMEM_UCX_LIBRARY=/nonexistent/libucp.so.0", r);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* name : {"T5-ucx-rkey-ptr", "T5-ucx-rma"}) {
    const json row = row_of(doc, name);
    EXPECT_EQ(row.value("status", ""), "SKIP") << row.dump();
    EXPECT_EQ(row.value("why", "").find("no UCX (dlopen(/nonexistent/libucp.so.0): "), 0u) << row.dump();
  }
  EXPECT_EQ(row_of(doc, "T3-memfd-cross-process").value("status", ""), "OK") << r.out;
  EXPECT_NE(r.out.find("RESULT T3-memfd-cross-process OK mmap[D]=rt"), std::string::npos) << r.out;
}

TEST(UcxRows, MeasureGivesRmaBesideMemcpy) {
  REQUIRE_UCX();
  extmem::test::ShellRun r;
  const json doc = run_json("--only=T5-ucx-rma --measure --measure-size=1048576 --measure-repeats=2", "", r);
  EXPECT_EQ(r.code, 0) << r.out;
  const json legs = row_of(doc, "T5-ucx-rma")["measure"]["legs"]["rma"];
  for (const char* key : {"rma_put_gbps", "rma_get_gbps", "memcpy_gbps"}) {
    ASSERT_TRUE(legs.contains(key)) << key << ": " << doc.dump();
    EXPECT_EQ(legs[key].value("n", 0), 2) << legs.dump();
    EXPECT_GT(legs[key].value("median", 0.0), 0.0) << legs.dump();
  }
  EXPECT_TRUE(legs.contains("rma_put_ratio")) << legs.dump();
  EXPECT_NE(r.out.find("ucx-put="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of memcpy"), std::string::npos) << r.out;
}

TEST(UcxRows, ExpectTransportRefusesOtherWords) {
  auto r = extmem::test::run_extmem("probe --expect-transport=udp");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--expect-transport: \"udp\" is not accepted: shm"), std::string::npos) << r.out;
}

}  // namespace
