// The probe's field-report checks (docs/probe.md, "Field-report checks") on lavapipe:
// post-export fd sanity, fd ownership after import, host-pointer import per
// backing, sealed memfds, and --soak, with the test-only faults that must trip them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <string>

#include "support/run_shell.h"

namespace {

using ProbeRun = extmem::test::ShellRun;

// Runs `extmem probe args` with `env` (KEY=VALUE or empty) prepended.
ProbeRun probe(const std::string& args, const std::string& env = {}) {
  return extmem::test::run_extmem("probe " + args, env);
}

std::string line_of(const std::string& out, const std::string& row) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("RESULT " + row + " [^\n]*")) ? m.str() : "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Both seals hold in the peer, the write-sealed copy maps read-only, and bytes round-trip through the other.
TEST(FieldChecks, SealedMemfdRoundTripsAndSealsHold) {
  ProbeRun r = probe("--only=T3-memfd-sealed");
  std::string line = line_of(r.out, "T3-memfd-sealed");
  EXPECT_TRUE(has(line, "T3-memfd-sealed OK sealed[D]=rt wsealed[i]=read-only")) << line;
  EXPECT_TRUE(has(line, "read/write map EPERM (1)")) << line;
  EXPECT_TRUE(has(line, "seals here SHRINK|GROW")) << line;
  EXPECT_TRUE(has(line, "MFD_NOEXEC_SEAL")) << line;
  EXPECT_EQ(r.code, 0) << r.out;
}

// A memfd created without MFD_ALLOW_SEALING makes the row say sealing is unavailable instead of passing.
TEST(FieldChecks, MemfdWithoutSealingIsUnsupportedNotOk) {
  ProbeRun r = probe("--only=T3-memfd-sealed", "EXTMEM_TEST_FAULT=T3-memfd-sealed:client:memfd_create:nosealing");
  EXPECT_TRUE(has(line_of(r.out, "T3-memfd-sealed"), "UNSUPPORTED why: sealing unavailable: fcntl(F_ADD_SEALS) -> EPERM (1)"))
      << r.out;
}

// An exported fd that is closed before it is sent is caught by the sanity check, which names itself.
TEST(FieldChecks, ClosedExportFdFailsSanityCheck) {
  ProbeRun r = probe("--only=T1-opaque-fd", "EXTMEM_TEST_FAULT=T1-opaque-fd:server:post-export:closefd");
  EXPECT_TRUE(has(line_of(r.out, "T1-opaque-fd"), "FAIL why: server: exported fd fails sanity: fcntl(F_GETFD) fails: EBADF (9)"))
      << r.out;
  EXPECT_EQ(r.code, 1);
}

// Every import leg says who owns the fd afterwards; lavapipe consumes it on success.
TEST(FieldChecks, VulkanImportReportsFdOwnership) {
  ProbeRun r = probe("--only=T1-opaque-fd");
  EXPECT_TRUE(has(line_of(r.out, "T1-opaque-fd"), "vkimport fd-consumed=yes")) << r.out;
}

// Host-pointer import is tried per backing; lavapipe accepts and round-trips all three.
TEST(FieldChecks, HostImportPerBacking) {
  ProbeRun r = probe("--only=T3-external-memory-host");
  std::string line = line_of(r.out, "T3-external-memory-host");
  EXPECT_TRUE(has(line, "OK mmap[D]=rt hostimport[D]=rt hostanon[D]=rt hostfile[D]=rt")) << line;
  EXPECT_FALSE(has(line, "refused backings")) << line;
}

// --soak=2 on lavapipe: every OK route soaks with stale=0 and keeps its verdict.
TEST(FieldChecks, SoakKeepsVerdictsWithNoStaleWords) {
  ProbeRun r = probe("--soak=2 --no-gles");
  for (const char* row : {"T1-opaque-fd", "T3-memfd-cross-process", "T3-external-memory-host",
                          "T3-client-memfd-server-import", "T3-memfd-sealed"}) {
    std::string line = line_of(r.out, row);
    EXPECT_TRUE(has(line, std::string(row) + " OK ")) << line;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex("soak: stale=(\\d+)/(\\d+) words in (\\d+) rounds"))) << line;
    EXPECT_EQ(m[1].str(), "0") << line;
    EXPECT_GT(std::stoull(m[3].str()), 0u) << line;
  }
  EXPECT_EQ(r.code, 0) << r.out;
}

// --soak outside 0..3600 s is a usage error naming the option.
TEST(FieldChecks, SoakRejectsBadValues) {
  for (const char* bad : {"--soak=-1", "--soak=abc", "--soak=4000"}) {
    ProbeRun r = probe(bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_TRUE(has(r.out, "--soak")) << r.out;
  }
}

// An OPAQUE_FD import of fds no driver exported: lavapipe refuses both with
// VK_ERROR_INVALID_EXTERNAL_HANDLE (the conformant answer, so the legs read rt
// and the row is OK), and closes the fd it refused (measured on Mesa 22.3).
TEST(FieldChecks, ForeignFdsAreRefusedWithTheirCode) {
  ProbeRun r = probe("--only=T1-opaque-fd-foreign-fd");
  std::string line = line_of(r.out, "T1-opaque-fd-foreign-fd");
  EXPECT_TRUE(has(line, "T1-opaque-fd-foreign-fd OK memfd[D]=rt tmpfs[D]=rt afterwards[i]=rt |")) << line;
  EXPECT_TRUE(has(line, "memfd: refused=VK_ERROR_INVALID_EXTERNAL_HANDLE fd-consumed=yes (a failed import closed an fd it did not own)"))
      << line;
  EXPECT_TRUE(has(line, "tmpfs: refused=VK_ERROR_INVALID_EXTERNAL_HANDLE")) << line;
  EXPECT_TRUE(has(line, "tmpfs file in ")) << line;
  EXPECT_EQ(r.code, 0) << r.out;
}

// Negative control: handed an fd the driver did export, the import is accepted, and that is a FAIL naming the step.
TEST(FieldChecks, AnAcceptedForeignFdFails) {
  ProbeRun r = probe("--only=T1-opaque-fd-foreign-fd", "EXTMEM_TEST_FAULT=T1-opaque-fd-foreign-fd:server:memfd_create:exported");
  std::string line = line_of(r.out, "T1-opaque-fd-foreign-fd");
  EXPECT_TRUE(has(line, "T1-opaque-fd-foreign-fd PARTIAL memfd[D]=no tmpfs[D]=rt afterwards[i]=rt")) << line;
  EXPECT_TRUE(has(line, "vkAllocateMemory(import OPAQUE_FD of a memfd no driver exported) -> VK_SUCCESS")) << line;
  EXPECT_TRUE(has(line, "memfd: accepted (a finding")) << line;
  EXPECT_EQ(r.code, 1) << r.out;
}

// A driver that crashes on the foreign import takes only its worker down: the row is FAIL naming the step.
TEST(FieldChecks, ACrashOnTheForeignImportIsThatRowsFail) {
  ProbeRun r = probe("--only=T1-opaque-fd-foreign-fd",
                     "'EXTMEM_TEST_FAULT=T1-opaque-fd-foreign-fd:server:import OPAQUE_FD of a memfd:abort'");
  std::string line = line_of(r.out, "T1-opaque-fd-foreign-fd");
  EXPECT_TRUE(has(line, "FAIL")) << line;
  EXPECT_TRUE(has(line, "SIGABRT")) << line;
  EXPECT_TRUE(has(line, "vkAllocateMemory(import OPAQUE_FD of a memfd no driver exported)")) << line;
  EXPECT_EQ(r.code, 1) << r.out;
}

// Re-export of imported memory on lavapipe: exportFromImportedHandleTypes has OPAQUE_FD (promised),
// and the third mapping shares the bytes both ways.
TEST(FieldChecks, ReexportedImportSharesTheBytes) {
  ProbeRun r = probe("--only=T1-opaque-fd");
  std::string line = line_of(r.out, "T1-opaque-fd");
  EXPECT_TRUE(has(line, "T1-opaque-fd OK rawmmap[i]=no vkimport[D]=rt gpu[D]=rt reexport[i]=rt")) << line;
  EXPECT_TRUE(has(line, "reexport: exportFromImported=0x1 (promised)")) << line;
  EXPECT_TRUE(has(line, "reimport fd-consumed=yes firstImportSeesD=yes")) << line;
}

// The host-pointer size matrix and invalid pointers as lavapipe answers them (Mesa 22.3): it
// accepts every size, off-alignment too, and a NULL and an unaligned pointer; each acceptance of
// invalid input is marked a finding, and none of it touches the verdict.
TEST(FieldChecks, HostPointerSizeMatrixAndInvalidPointers) {
  ProbeRun r = probe("--only=T3-external-memory-host");
  std::string line = line_of(r.out, "T3-external-memory-host");
  EXPECT_TRUE(has(line, "T3-external-memory-host OK ")) << line;
  EXPECT_TRUE(has(line, "sizeMatrix(align=4096): 65536(k*align)=accepted 61440(k*align-4096)=accepted "
                        "64512(k*align-1024)=accepted (a finding: accepted a size off the alignment)"))
      << line;
  EXPECT_TRUE(has(line, "invalidPointer: NULL props=VK_SUCCESS import=accepted (a finding: accepted invalid input); "
                        "unaligned(+2048) props=VK_SUCCESS import=accepted (a finding: accepted invalid input)"))
      << line;
  EXPECT_FALSE(has(line, "UNSUPPORTED")) << line;
  EXPECT_EQ(r.code, 0) << r.out;
}

}  // namespace
