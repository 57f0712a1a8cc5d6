// --fd-transport on lavapipe, real processes (docs/probe.md, "How fds cross"):
// with `both`, every row that passes an fd runs a second time as "<row>@pidfd"
// with its fds fetched by pidfd_getfd, and must answer exactly as its SCM_RIGHTS
// run did; a fetching side that may not fetch (another uid, no CAP_SYS_PTRACE)
// makes the twin UNSUPPORTED with the step and errno, never FAIL; phase A says
// whether pidfd_getfd is permitted here.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "probe/parent/fd_check.h"
#include "probe/phase_a_codec.h"
#include "probe/worker/child_context.h"
#include "probe/worker/fd_fetch_failure.h"
#include "support/run_shell.h"
#include "support/shared_run.h"
#include "support/temp_files.h"

namespace {

using nlohmann::json;
using extmem::RowStatus;
namespace probe = extmem::probe;

constexpr const char* kSuffix = "@pidfd";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// `extmem probe --fd-transport=both --json=F`, once for the tests that read it.
struct BothRun {
  extmem::test::ShellRun run;
  std::string text;  // the document as written
  json doc;
};
const BothRun& both_run() {
  // Made once per ctest invocation and read by every test here (support/shared_run.h).
  static const BothRun r = [] {
    const std::string dir = extmem::test::shared_run_dir("probe-fd-transport-both", [](const std::string& dir) {
      const extmem::test::ShellRun run = extmem::test::run_extmem("probe --fd-transport=both --json=" + dir + "/r.json");
      std::ofstream(dir + "/run.out") << run.out;
      std::ofstream(dir + "/run.code") << run.code;
    });
    BothRun b;
    b.run.out = extmem::test::slurp(dir + "/run.out");
    std::istringstream(extmem::test::slurp(dir + "/run.code")) >> b.run.code;
    b.text = extmem::test::slurp(dir + "/r.json");
    b.doc = json::parse(b.text, nullptr, false);
    return b;
  }();
  return r;
}

// The rows of the document by name.
std::map<std::string, json> rows_by_name(const json& doc) {
  std::map<std::string, json> out;
  if (doc.is_object() && doc.contains("rows"))
    for (const json& r : doc["rows"]) out[r.value("row", std::string())] = r;
  return out;
}

// Skips the caller when this machine refuses pidfd_getfd between the probe's processes.
#define SKIP_UNLESS_PIDFD_PERMITTED(doc)                                                              \
  do {                                                                                                \
    const json& fdt = (doc)["fd_transport"];                                                          \
    if (fdt.value("pidfd_getfd", std::string()) != "permitted")                                       \
      GTEST_SKIP() << "pidfd_getfd is not permitted here, phase A says: " << fdt.dump();              \
  } while (0)

// The run succeeds as the default run does, and phase A answers the question.
// EXTMEM_TEST_FAULT can name the @pidfd twin alone: the plain run is untouched, the twin FAILs.
TEST(ProbeFdTransport, FaultCanNameTheTwinAlone) {
  const auto r = extmem::test::run_extmem("probe --only=T1-opaque-fd --fd-transport=both",
                                          "'EXTMEM_TEST_FAULT=T1-opaque-fd@pidfd:server:create Vulkan device:exit'");
  const std::string out = r.out;
  const auto line = [&](const std::string& row) {
    const std::size_t at = out.find("RESULT " + row + " ");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_NE(line("T1-opaque-fd").find("T1-opaque-fd OK"), std::string::npos) << out;
  EXPECT_NE(line("T1-opaque-fd@pidfd").find("T1-opaque-fd@pidfd FAIL"), std::string::npos) << out;
}

// A fetch that hit a resource limit (EMFILE/ENFILE/ENOMEM) could not be tried: not a refusal,
// in phase A's line and JSON, and a row meeting it FAILs (fatal) rather than UNSUPPORTED.
TEST(ProbeFdTransport, ResourceLimitIsCouldNotTryNotRefused) {
  const extmem::Error emfile = extmem::os_error("pidfd_open(pid 42)", EMFILE, "Too many open files");
  const extmem::Error eperm = extmem::os_error("pidfd_getfd(pid 42, fd 7)", EPERM, "Operation not permitted");
  EXPECT_TRUE(extmem::probe::fd_fetch_hit_resource_limit(emfile));
  EXPECT_TRUE(extmem::probe::fd_fetch_hit_resource_limit(extmem::os_error("pidfd_getfd", ENFILE)));
  EXPECT_TRUE(extmem::probe::fd_fetch_hit_resource_limit(extmem::os_error("pidfd_getfd", ENOMEM)));
  EXPECT_FALSE(extmem::probe::fd_fetch_hit_resource_limit(eperm));
  // Decided by the errno number, not the code's words: a code that reads like
  // EMFILE without the number is not a resource limit.
  EXPECT_FALSE(extmem::probe::fd_fetch_hit_resource_limit(
      extmem::Error{"pidfd_open(pid 42)", extmem::ErrorKind::os, "EMFILE (24)", "Too many open files"}));
  const extmem::RouteFacts limit = extmem::probe::fd_fetch_failure_facts(emfile);
  EXPECT_FALSE(limit.unsupported);
  ASSERT_TRUE(limit.fatal);
  EXPECT_NE(limit.fatal->find("could not be tried: pidfd_open(pid 42) -> EMFILE (24)"), std::string::npos) << *limit.fatal;
  const extmem::RouteFacts refused = extmem::probe::fd_fetch_failure_facts(eperm);
  EXPECT_FALSE(refused.fatal);
  ASSERT_TRUE(refused.unsupported);
  EXPECT_EQ(*refused.unsupported, extmem::probe::fd_refusal_reason(eperm));
  extmem::probe::FdTransportFinding f;
  f.attempted = true;
  f.how = "a child";
  f.refused = emfile;
  std::ostringstream line;
  extmem::probe::print_fd_transport(line, f);
  EXPECT_NE(line.str().find("pidfd_getfd could not be tried: pidfd_open(pid 42) -> EMFILE (24)"), std::string::npos)
      << line.str();
  EXPECT_EQ(line.str().find("refused"), std::string::npos) << line.str();
  extmem::probe::PhaseA a;
  a.vulkan.devices.resize(1);
  a.fd_transport = f;
  EXPECT_EQ(extmem::probe::phase_a_json(a)["fd_transport"]["pidfd_getfd"], "could not try");
  a.fd_transport.refused = eperm;
  EXPECT_EQ(extmem::probe::phase_a_json(a)["fd_transport"]["pidfd_getfd"], "refused");
}

TEST(ProbeFdTransport, BothRunExitsZeroAndPhaseASaysWhetherPermitted) {
  const BothRun& b = both_run();
  ASSERT_FALSE(b.doc.is_discarded()) << b.run.out;
  EXPECT_EQ(b.run.code, 0) << b.run.out;
  EXPECT_NE(b.run.out.find("== phase A: fd transport: pidfd_getfd "), std::string::npos) << b.run.out;
  EXPECT_NE(b.run.out.find("Yama ptrace_scope "), std::string::npos) << b.run.out;
  const json& fdt = b.doc["fd_transport"];
  EXPECT_TRUE(fdt.value("pidfd_getfd", std::string()) == "permitted" || fdt.value("pidfd_getfd", std::string()) == "refused")
      << fdt.dump();
  EXPECT_EQ(b.doc["options"]["fd_transport"], "both");
}

// The document, twins and phase A's fd_transport included, validates against docs/probe-result.schema.json.
TEST(ProbeFdTransport, BothRunJsonValidatesAgainstSchema) {
  const BothRun& b = both_run();
  ASSERT_FALSE(b.doc.is_discarded()) << b.run.out;
  extmem::test::TempDir dir;
  std::ofstream(dir.file("r.json")) << b.text;
  const std::string script =
      "import json, sys, jsonschema; s = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2])); "
      "c = jsonschema.validators.validator_for(s); errs = list(c(s).iter_errors(d)); "
      "[print('invalid at', list(e.absolute_path), e.message[:300]) for e in errs]; sys.exit(1 if errs else 0)";
  const std::string cmd = "python3 -c \"" + script + "\" " + std::string(EXTMEM_SOURCE_DIR) +
                          "/docs/probe-result.schema.json " + dir.file("r.json") + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
}

// Every row that passes an fd (--list-routes' pidfd_twin) has its twin right after it; no other row has one.
TEST(ProbeFdTransport, BothRunHasATwinForEveryRowThatPassesFds) {
  const BothRun& b = both_run();
  ASSERT_FALSE(b.doc.is_discarded()) << b.run.out;
  const auto listed = extmem::test::run_extmem("probe --list-routes=json");
  const json routes = json::parse(listed.out, nullptr, false);
  ASSERT_FALSE(routes.is_discarded()) << listed.out;
  const json& rows = b.doc["rows"];
  for (const json& route : routes["routes"]) {
    const std::string name = route["row"];
    std::size_t at = rows.size();
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (rows[i]["row"] == name) at = i;
    ASSERT_LT(at, rows.size()) << name;
    const bool twin_next = at + 1 < rows.size() && rows[at + 1]["row"] == name + kSuffix;
    EXPECT_EQ(twin_next, route["pidfd_twin"].get<bool>()) << name;
  }
}

// The twin answers as its row: same status, same why, same legs (every field of every leg).
TEST(ProbeFdTransport, BothRunTwinsGiveIdenticalVerdicts) {
  const BothRun& b = both_run();
  ASSERT_FALSE(b.doc.is_discarded()) << b.run.out;
  SKIP_UNLESS_PIDFD_PERMITTED(b.doc);
  const auto rows = rows_by_name(b.doc);
  std::size_t twins = 0;
  for (const auto& [name, twin] : rows) {
    if (!ends_with(name, kSuffix)) continue;
    ++twins;
    const std::string base = name.substr(0, name.size() - std::string(kSuffix).size());
    ASSERT_EQ(rows.count(base), 1u) << name;
    const json& row = rows.at(base);
    EXPECT_EQ(twin["status"], row["status"]) << name << ": " << twin.dump() << "\nvs\n" << row.dump();
    EXPECT_EQ(twin["why"], row["why"]) << name;
    EXPECT_EQ(twin["legs"], row["legs"]) << name;
    EXPECT_EQ(twin["trace"], row["trace"]) << name;
  }
  EXPECT_GE(twins, 10u);
}

// The twins that ran really took the pidfd path: each says how many fds crossed
// by pidfd_getfd, at least one wherever an fd was there to cross (every twin but
// an UNSUPPORTED one: a driver that refuses the export, as Mesa 25's lavapipe does
// the dma-buf one, has nothing to send), and no SCM_RIGHTS row says so. A twin
// that silently fell back to SCM_RIGHTS would pass the comparison above.
TEST(ProbeFdTransport, BothRunTwinsSayTheirFdsCrossedByPidfd) {
  const BothRun& b = both_run();
  ASSERT_FALSE(b.doc.is_discarded()) << b.run.out;
  SKIP_UNLESS_PIDFD_PERMITTED(b.doc);
  std::size_t ran = 0;
  for (const auto& [name, row] : rows_by_name(b.doc)) {
    std::string counted;
    for (const json& d : row["detail"])
      if (d.get<std::string>().rfind("fd-transport=pidfd fds=", 0) == 0) counted = d;
    if (!ends_with(name, kSuffix)) {
      EXPECT_EQ(counted, "") << name;
      continue;
    }
    if (row["seconds"].get<double>() == 0) continue;  // decided in phase A (UNSUPPORTED, SKIP): nothing crossed
    ASSERT_NE(counted, "") << name << ": " << row.dump();
    if (row["status"] == "UNSUPPORTED") continue;
    ++ran;
    EXPECT_NE(counted, "fd-transport=pidfd fds=0") << name << ": " << row.dump();
  }
  EXPECT_GE(ran, 8u);
}

// ---- the refusal: the fetching side may not fetch ----

// LeakSanitizer reads its suppressions file (the drivers' leaks) when a process
// exits with leaks; a 65534 process that cannot read it dies of SIGABRT there. A
// source tree in root's 0700 home (scripts/fresh-root.sh) is unreadable to 65534,
// though setpriv of util-linux 2.41 still starts the binary in it, so the 65534
// processes get LSAN_OPTIONS naming a copy in DIR. "" when there is nothing to copy.
std::string lsan_options_for_nobody(const std::filesystem::path& dir) {
  const char* value = std::getenv("LSAN_OPTIONS");
  if (value == nullptr) return "";
  std::string options = std::string(":") + value;
  const std::string key = ":suppressions=";
  const std::size_t at = options.find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  const std::size_t end = std::min(options.find(':', start), options.size());
  const std::filesystem::path copy = dir / "lsan.supp";
  std::error_code ec;
  std::filesystem::copy_file(options.substr(start, end - start), copy, ec);
  if (ec || ::chmod(copy.c_str(), 0644) != 0) return "";
  options.replace(start, end - start, copy.string());
  return options.substr(1);
}

// A script the probe starts its processes through (ProbeOptions::worker): the
// processes that hold the exported memory stay root, every other process of the
// probe runs as uid and gid 65534 with no groups and no capabilities (setpriv).
// Warm workers: slot A, the first worker (--phase-a), runs the server halves and
// stays root; slot B runs the client halves as 65534. Fresh children
// (--isolate=route): --role=server stays root, --role=client is 65534. Phase A's
// check child runs as 65534 too.
std::string write_wrapper(const std::filesystem::path& dir) {
  const std::string path = (dir / "as-nobody.sh").string();
  const std::string lsan = lsan_options_for_nobody(dir);
  std::ofstream f(path);
  f << "#!/bin/sh\n"
       "case \" $* \" in\n"
       "  *\" --phase-a=\"*|*\" --role=server \"*) exec " << EXTMEM_BINARY << " \"$@\" ;;\n"
       "esac\n";
  if (!lsan.empty()) f << "LSAN_OPTIONS='" << lsan << "'\nexport LSAN_OPTIONS\n";
  f << "exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all " << EXTMEM_BINARY << " \"$@\"\n";
  f.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

probe::Findings refusal_run(probe::Isolation isolate) {
  extmem::test::TempDir dir;
  ::chmod(dir.path.c_str(), 0755);  // 65534 must reach the wrapper
  probe::ProbeOptions o;
  o.worker = write_wrapper(dir.path);
  o.fd_transport = probe::FdTransportChoice::both;
  o.isolate = isolate;
  o.only = {"T1-opaque-fd", "T3-external-memory-host", "T3-memfd-cross-process"};
  auto found = probe::find(o);
  EXPECT_TRUE(found.ok()) << found.error().message();
  return found ? std::move(*found) : probe::Findings{};
}

const probe::RowResult* find_row(const probe::Findings& f, const std::string& name) {
  for (const probe::RowResult& r : f.rows)
    if (r.row == name) return &r;
  ADD_FAILURE() << "no row " << name;
  return nullptr;
}

void expect_refused_but_scm_works(const probe::Findings& f) {
  for (const probe::RowResult& r : f.rows) {  // in the test log: what the refusal looked like here
    if (r.verdict.status == RowStatus::skip) continue;
    std::string detail;
    for (const std::string& d : r.detail) detail += (detail.empty() ? "" : "; ") + d;
    std::printf("refusal run: %s %s why: %s | %s\n", r.row.c_str(), extmem::to_string(r.verdict.status),
                r.verdict.why.c_str(), detail.c_str());
  }
  // SCM_RIGHTS needs no permission: the same rows are OK between the two uids.
  for (const char* name : {"T1-opaque-fd", "T3-external-memory-host", "T3-memfd-cross-process"}) {
    const probe::RowResult* r = find_row(f, name);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->verdict.status, RowStatus::ok) << name << ": " << r->verdict.why;
  }
  // The client (65534) fetches from the server (root): EPERM, named with its step.
  // T1-opaque-fd: the fetching side drives; T3-external-memory-host: the fetching
  // side only serves, and the driving sender learns the refusal from the ack.
  for (const char* name : {"T1-opaque-fd@pidfd", "T3-external-memory-host@pidfd"}) {
    const probe::RowResult* r = find_row(f, name);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->verdict.status, RowStatus::unsupported) << name << ": " << r->verdict.why;
    EXPECT_NE(r->verdict.why.find("fd transport pidfd: pidfd_getfd(pid "), std::string::npos) << name << ": " << r->verdict.why;
    EXPECT_NE(r->verdict.why.find("-> EPERM (1) (Operation not permitted)"), std::string::npos) << name << ": "
                                                                                              << r->verdict.why;
    // The serving owner is told the route is over, not left to meet a closed socket.
    for (const std::string& d : r->detail) EXPECT_EQ(d.find("exited with code"), std::string::npos) << name << ": " << d;
  }
  // The other direction: the server (root, CAP_SYS_PTRACE) fetches the client's
  // memfd and may. The refusal is the fetching side's, not the row's.
  const probe::RowResult* other = find_row(f, "T3-memfd-cross-process@pidfd");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->verdict.status, RowStatus::ok) << other->verdict.why;
  // Phase A's child ran as 65534 as well, and says so with the errno.
  EXPECT_FALSE(f.phase_a.fd_transport.permitted);
  EXPECT_TRUE(f.phase_a.fd_transport.attempted);
  ASSERT_TRUE(f.phase_a.fd_transport.refused);
  EXPECT_EQ(f.phase_a.fd_transport.refused->code, "EPERM (1)");
  EXPECT_NE(f.phase_a.fd_transport.how.find("uid=65534"), std::string::npos) << f.phase_a.fd_transport.how;
}

bool can_run_as_nobody(std::string& why) {
  if (::geteuid() != 0) {
    why = "needs root to start the fetching side as uid 65534 (uid " + std::to_string(::geteuid()) + ")";
    return false;
  }
  if (::access("/usr/bin/setpriv", X_OK) != 0) {
    why = "no /usr/bin/setpriv (util-linux)";
    return false;
  }
  // A build tree that uid 65534 cannot reach (a 0700 home directory) would fail the
  // workers' start, not the fetch: that is not the refusal under test.
  const std::string probe_as_nobody = std::string("setpriv --reuid=65534 --regid=65534 --clear-groups ") + EXTMEM_BINARY +
                                      " probe --list-routes=json >/dev/null 2>&1";
  if (std::system(probe_as_nobody.c_str()) != 0) {
    why = std::string("uid 65534 cannot run ") + EXTMEM_BINARY + " (a directory above it is not searchable?)";
    return false;
  }
  return true;
}

// Warm workers of two uids: the @pidfd twins whose fetching side is 65534 are UNSUPPORTED with EPERM, not FAIL.
TEST(ProbeFdTransport, OtherUidWithoutCapSysPtraceIsUnsupportedWithReason) {
  std::string why;
  if (!can_run_as_nobody(why)) GTEST_SKIP() << why;
  expect_refused_but_scm_works(refusal_run(probe::Isolation::none));
}

// The same with fresh processes per route (--isolate=route).
TEST(ProbeFdTransport, OtherUidRefusalIsTheSameWithIsolatedRoutes) {
  std::string why;
  if (!can_run_as_nobody(why)) GTEST_SKIP() << why;
  expect_refused_but_scm_works(refusal_run(probe::Isolation::route));
}

}  // namespace
