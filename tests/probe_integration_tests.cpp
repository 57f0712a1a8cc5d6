// Integration tests of `extmem probe`: the real binary (EXTMEM_BINARY) on the
// machine's Vulkan driver (lavapipe on the embedded default, docs/probe.md,
// "Embedded default"), its RESULT lines, summary, --json document against
// docs/probe-result.schema.json, usage errors, device selection, the faults
// injected through EXTMEM_TEST_FAULT=ROW:ROLE:STEP-SUBSTRING:ACTION
// (src/probe/child_context.cpp), and, in-process, fd and child hygiene of run().
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/os/fd.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/routes.h"
#include "support/row_names.h"
#include "support/shared_run.h"

extern char** environ;

namespace {

// The comm of process `pid` ("" when gone): readable for a zombie too.
std::string comm_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string c;
  std::getline(f, c);
  return c;
}

// True when every process left in process group `pgid` is a sanitizer runtime's
// llvm-symbolizer (spawned to symbolize a leak report inside a driver at exit, and
// never reaped by the process that started it).
bool only_symbolizers_in_group(pid_t pgid) {
  bool any = false;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = std::stoi(name);
    if (::getpgid(pid) != pgid) continue;
    any = true;
    if (comm_of(pid) != "llvm-symbolizer") return false;
  }
  return any;
}

// Reaps this process's zombie children that were llvm-symbolizer helpers (see above).
void reap_orphaned_symbolizers() {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = std::stoi(name);
    std::ifstream st("/proc/" + name + "/stat");
    std::string line;
    std::getline(st, line);
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid() && comm_of(pid) == "llvm-symbolizer") ::waitpid(pid, nullptr, 0);
  }
}

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = EXTMEM_BINARY;
const std::string kSchema = std::string(EXTMEM_SOURCE_DIR) + "/docs/probe-result.schema.json";

// Every row the probe prints, in print order (the literal list: support/row_names.h).
const std::vector<std::string>& kRows = extmem::test::kRowNames;

double now_s() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// How a command ended and what it printed.
struct Proc {
  bool exited = false;     // exited normally (not signaled)
  int code = -1;           // exit status when exited
  int signal = 0;          // terminating signal otherwise
  std::string out, err;    // stdout, stderr
  bool timed_out = false;  // our own limit hit: the output pipes stayed open (the command or a descendant hung)
  bool leftovers = false;  // a process of the command's process group was still alive after it exited
  double seconds = 0;      // wall time
};

// Runs argv (PATH lookup) in its own process group with stdout and stderr
// captured, the environment of this process minus EXTMEM_TEST_FAULT plus `env`,
// and core dumps off (fault tests abort and crash children on purpose). Waits
// until both pipes reach EOF, i.e. until no descendant holds them, or `limit_s`.
Proc run_cmd(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env = {},
             double limit_s = 60) {
  Proc p;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s(*e);
    std::string key = s.substr(0, s.find('='));
    bool overridden = key == "EXTMEM_TEST_FAULT";
    for (const auto& [k, v] : env) overridden = overridden || k == key;
    if (!overridden) env_strings.push_back(std::move(s));
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return p;
  }
  const double start = now_s();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execvpe(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return p;
  }
  ::setpgid(pid, pid);  // also here, so the group exists whichever side runs first

  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&p.out, &p.err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    const double left = start + limit_s - now_s();
    if (left <= 0) {
      p.timed_out = true;
      break;
    }
    int r = ::poll(fds, 2, static_cast<int>(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (p.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  p.seconds = now_s() - start;
  p.exited = WIFEXITED(status);
  p.code = p.exited ? WEXITSTATUS(status) : -1;
  p.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  // Anything left in the group (a child the probe failed to kill) is a leak; clean it up either way.
  // Sanitizer builds: the runtime's own llvm-symbolizer helper outlives the process that
  // started it (a leak report at a driver's exit, suppressed or not); it is not the probe's.
  if (::kill(-pid, 0) == 0) {
    p.leftovers = !only_symbolizers_in_group(pid);
    ::kill(-pid, SIGKILL);
  }
  return p;
}

Proc probe(std::vector<std::string> args, const std::vector<std::pair<std::string, std::string>>& env = {},
           double limit_s = 60) {
  args.insert(args.begin(), {kBinary, "probe"});
  return run_cmd(args, env, limit_s);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The "RESULT <row> ..." line of `row`, or "" when absent.
std::string result_line(const std::string& out, const std::string& row) {
  for (const std::string& line : lines_of(out))
    if (line.rfind("RESULT " + row + " ", 0) == 0) return line;
  return {};
}

// The status token of `row`'s RESULT line, or "" when absent.
std::string status_of(const std::string& out, const std::string& row) {
  std::string line = result_line(out, row);
  if (line.empty()) return {};
  std::istringstream in(line);
  std::string result, name, status;
  in >> result >> name >> status;
  return status;
}

// The text after " why: " up to the detail separator " | ", or "".
std::string why_of(const std::string& line) {
  std::size_t at = line.find(" why: ");
  if (at == std::string::npos) return {};
  std::string why = line.substr(at + 6);
  return why.substr(0, why.find(" | "));
}

// Whether `why` names a step of `role` that contains `step_part` ("server: serve the peer's checks").
bool names_step(const std::string& why, const std::string& role, const std::string& step_part) {
  return std::regex_search(why, std::regex(role + ": [^;|]*" + step_part));
}

std::size_t count_results(const std::string& out) {
  std::size_t n = 0;
  for (const std::string& line : lines_of(out)) n += line.rfind("RESULT ", 0) == 0 ? 1 : 0;
  return n;
}

// The exit code the RESULT lines call for: 1 when a row is FAIL or PARTIAL, else 0.
int exit_code_for(const std::string& out) {
  for (const std::string& row : kRows) {
    std::string st = status_of(out, row);
    if (st == "FAIL" || st == "PARTIAL") return extmem::probe::kExitFailed;
  }
  return extmem::probe::kExitOk;
}

// The rows of one group, or of every other group, from the route table.
std::vector<std::string> rows_where(bool in_group, const std::string& group) {
  std::vector<std::string> out;
  for (const extmem::probe::RouteInfo& r : extmem::probe::routes())
    if ((r.group == group) == in_group) out.push_back(r.row);
  return out;
}
const std::vector<std::string> kGlesRows = rows_where(true, "gles");
const std::vector<std::string> kNonGlesRows = rows_where(false, "gles");

std::string describe(const Proc& p) {
  return "exit=" + std::to_string(p.code) + " signal=" + std::to_string(p.signal) +
         (p.timed_out ? " TIMED OUT" : "") + "\n--- stdout\n" + p.out + "--- stderr\n" + p.err;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory under the temp dir, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "extmem-probe-it-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    return out;
  }

 private:
  fs::path path_;
};

// Validates `document` against `schema` with python3-jsonschema (the validator
// class the schema's $schema names, with format checking). Returns its output.
Proc validate_json(const std::string& schema, const std::string& document) {
  static const char* kScript =
      "import json, sys, jsonschema\n"
      "schema = json.load(open(sys.argv[1]))\n"
      "doc = json.load(open(sys.argv[2]))\n"
      "cls = jsonschema.validators.validator_for(schema)\n"
      "cls.check_schema(schema)\n"
      "errors = list(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(doc))\n"
      "for e in errors: print('invalid at', list(e.absolute_path), ':', e.message[:300])\n"
      "sys.exit(1 if errors else 0)\n";
  return run_cmd({"python3", "-c", kScript, schema, document});
}

// A Proc kept as DIR/proc.json, so that one run can be read by other test processes.
void save_proc(const std::string& dir, const Proc& p) {
  const nlohmann::json j = {{"exited", p.exited}, {"code", p.code},         {"signal", p.signal},
                            {"out", p.out},       {"err", p.err},           {"timed_out", p.timed_out},
                            {"leftovers", p.leftovers}, {"seconds", p.seconds}};
  std::ofstream(dir + "/proc.json") << j.dump();
}
Proc load_proc(const std::string& dir) {
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/proc.json"), nullptr, false);
  Proc p;
  if (!j.is_object()) {
    ADD_FAILURE() << "the shared run in " << dir << " left no proc.json";
    return p;
  }
  p.exited = j.value("exited", false);
  p.code = j.value("code", -1);
  p.signal = j.value("signal", 0);
  p.out = j.value("out", std::string());
  p.err = j.value("err", std::string());
  p.timed_out = j.value("timed_out", false);
  p.leftovers = j.value("leftovers", false);
  p.seconds = j.value("seconds", 0.0);
  return p;
}

// ---- one run of each kind, shared by the tests that only read its output ----
// Made once per ctest invocation, not once per test process (support/shared_run.h).

class ProbeIntegration : public ::testing::Test {
 protected:
  // `extmem probe` with no options.
  static const Proc& default_run() {
    static const Proc p = load_proc(
        extmem::test::shared_run_dir("probe-default", [](const std::string& dir) { save_proc(dir, probe({})); }));
    return p;
  }
  // `extmem probe --json=FILE`: the process and the document's text.
  struct JsonRun {
    Proc proc;
    std::string text;
    std::vector<std::string> dir_entries;  // what the directory held afterwards
  };
  static const JsonRun& json_run() {
    static const JsonRun r = [] {
      // The probe writes into out/, alone, so that its entries are all it left.
      const std::string dir = extmem::test::shared_run_dir("probe-default-json", [](const std::string& dir) {
        fs::create_directory(dir + "/out");
        save_proc(dir, probe({"--json=" + dir + "/out/result.json"}));
      });
      JsonRun run;
      run.proc = load_proc(dir);
      run.text = read_file(dir + "/out/result.json");
      for (const auto& e : fs::directory_iterator(dir + "/out")) run.dir_entries.push_back(e.path().filename().string());
      return run;
    }();
    return r;
  }
  static json json_doc() {
    json doc = json::parse(json_run().text, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << "not JSON:\n" << json_run().text;
    return doc;
  }
};

// ---- the default run on lavapipe ----

// No row fails on lavapipe (docs/probe.md, "Embedded default"): the GLES rows run on zink, which --gl-driver=auto
// picks there, so the default run exits 0 (the first command of the README).
TEST_F(ProbeIntegration, DefaultRunExitCodeFollowsRows) {
  const Proc& p = default_run();
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_TRUE(p.exited) << describe(p);
  for (const std::string& row : kRows) EXPECT_NE(status_of(p.out, row), "FAIL") << result_line(p.out, row);
  for (const std::string& row : kRows) EXPECT_NE(status_of(p.out, row), "PARTIAL") << result_line(p.out, row);
  EXPECT_EQ(p.code, exit_code_for(p.out)) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitOk) << describe(p);
}

// Every row gets exactly one RESULT line, in print order.
TEST_F(ProbeIntegration, DefaultRunPrintsOneResultLinePerRowInOrder) {
  const Proc& p = default_run();
  std::vector<std::string> names;
  for (const std::string& line : lines_of(p.out)) {
    if (line.rfind("RESULT ", 0) != 0) continue;
    std::istringstream in(line);
    std::string result, name;
    in >> result >> name;
    names.push_back(name);
  }
  EXPECT_EQ(names, kRows) << describe(p);
}

// T1-opaque-fd is OK with the informational raw mmap failing and the fd's payload found at +4096.
TEST_F(ProbeIntegration, DefaultRunOpaqueFdOkWithTraceAndPayloadOffset) {
  std::string line = result_line(default_run().out, "T1-opaque-fd");
  EXPECT_EQ(line.rfind("RESULT T1-opaque-fd OK rawmmap[i]=no vkimport[D]=rt gpu[D]=rt", 0), 0u) << line;
  EXPECT_NE(line.find("payloadAt=4096"), std::string::npos) << line;
}

// T1-dma-buf is UNSUPPORTED on lavapipe and says why: where phase A lists
// VK_EXT_external_memory_dma_buf absent (Mesa 22.3) the row names it and starts
// nothing; where it is exposed (Mesa 25: no /dev/udmabuf to back the export) the
// driver's refusal is the reason, with its code.
TEST_F(ProbeIntegration, DefaultRunDmaBufUnsupported) {
  const std::string& out = default_run().out;
  std::string line = result_line(out, "T1-dma-buf");
  EXPECT_EQ(status_of(out, "T1-dma-buf"), "UNSUPPORTED") << line;
  if (out.find(" VK_EXT_external_memory_dma_buf=no") != std::string::npos)
    EXPECT_EQ(why_of(line), "VK_EXT_external_memory_dma_buf not exposed by the device") << line;
  else
    EXPECT_NE(why_of(line).find("VK_ERROR_"), std::string::npos) << line;
}

// The Vulkan and GL S1 rows are UNSUPPORTED on lavapipe with the exact reason: it has no
// VK_KHR_external_semaphore_fd (S1-cuda-semaphore is SKIP without a CUDA driver: cuda_tests.cpp).
TEST_F(ProbeIntegration, DefaultRunS1RowsUnsupportedWithReason) {
  for (const char* row : {"S1-semaphore-opaque-fd", "S1-timeline-opaque-fd", "S1-sync-fd", "S1-gles-semaphore"}) {
    std::string line = result_line(default_run().out, row);
    EXPECT_EQ(status_of(default_run().out, row), "UNSUPPORTED") << line;
    EXPECT_EQ(why_of(line), "VK_KHR_external_semaphore_fd not exposed by the device") << line;
  }
}

// Phase A decides the S1 rows on lavapipe without starting a process: a fault hook that aborts every
// step of either half would otherwise turn the UNSUPPORTED into FAIL.
TEST_F(ProbeIntegration, S1UnsupportedStartsNoProcess) {
  for (const char* role : {"server", "client"}) {
    const Proc p = probe({"--only=S1-semaphore-opaque-fd,S1-sync-fd"},
                         {{"EXTMEM_TEST_FAULT", std::string("S1-semaphore-opaque-fd:") + role + "::abort"}});
    EXPECT_EQ(p.code, 0) << p.out;
    EXPECT_EQ(status_of(p.out, "S1-semaphore-opaque-fd"), "UNSUPPORTED") << p.out;
    EXPECT_EQ(status_of(p.out, "S1-sync-fd"), "UNSUPPORTED") << p.out;
  }
}

// Under zink (GL on lavapipe's Vulkan) GL has no GL_EXT_semaphore_fd either, and S1-gles-semaphore stays
// UNSUPPORTED with the Vulkan reason, which phase A checks first.
TEST_F(ProbeIntegration, ZinkGlesSemaphoreRowUnsupported) {
  const Proc p = probe({"--only-s1"}, {{"LIBGL_ALWAYS_SOFTWARE", "1"}, {"MESA_LOADER_DRIVER_OVERRIDE", "zink"}});
  EXPECT_NE(p.out.find("GL_RENDERER=zink"), std::string::npos) << p.out.substr(0, 3000);
  EXPECT_NE(p.out.find("GL_EXT_semaphore_fd=no"), std::string::npos) << p.out.substr(0, 3000);
  const std::string line = result_line(p.out, "S1-gles-semaphore");
  EXPECT_EQ(status_of(p.out, "S1-gles-semaphore"), "UNSUPPORTED") << line;
  EXPECT_EQ(why_of(line), "VK_KHR_external_semaphore_fd not exposed by the device") << line;
}

// --only-s1 selects exactly the S1 rows: only they are printed, the others are one
// line ("N rows not selected by --only-s1"), and the JSON keeps every row, the
// others SKIP "not selected" (Android-only rows keep their platform reason, decided first).
TEST_F(ProbeIntegration, OnlyS1SelectsTheSyncRows) {
  TempDir dir;
  const std::string json_path = dir.file("s1.json");
  const Proc p = probe({"--only-s1", "--json=" + json_path});
  std::size_t others = 0;
  for (const std::string& row : extmem::test::kRowNames) {
    const std::string line = result_line(p.out, row);
    if (row.rfind("S1-", 0) == 0) {
      EXPECT_NE(line, "") << row << "\n" << p.out;
      EXPECT_EQ(why_of(line).find("not selected"), std::string::npos) << line;
    } else {
      ++others;
      EXPECT_EQ(line, "") << "printed though not selected\n" << p.out;
    }
  }
  const std::string rest = std::to_string(others) + " rows not selected by --only-s1 (SKIP; the JSON lists them)\n";
  const std::size_t summary = p.out.find("== summary");
  ASSERT_NE(summary, std::string::npos) << p.out;
  EXPECT_NE(p.out.rfind(rest, summary), std::string::npos) << "after the RESULT lines\n" << p.out;
  EXPECT_NE(p.out.find(rest, summary), std::string::npos) << "in the summary\n" << p.out;
  for (const std::string& line : lines_of(p.out.substr(summary)))
    if (line.rfind("T", 0) == 0) ADD_FAILURE() << "a row not selected in the summary table: " << line;
  const json doc = json::parse(read_file(json_path), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << p.out;
  std::size_t unselected = 0;
  for (const json& r : doc["rows"]) {
    const std::string name = r["row"];
    if (name.rfind("S1-", 0) == 0) continue;
    ++unselected;
    EXPECT_EQ(r["status"], "SKIP") << r.dump();
    const std::string why = r["why"];
    if (why.find("Android") == std::string::npos) EXPECT_EQ(why, "not selected by --only-s1") << r.dump();
  }
  EXPECT_EQ(unselected, others) << doc.dump();
}

// --only=ROW prints that row alone, in the RESULT lines and in the summary table.
TEST_F(ProbeIntegration, OnlyOneRowPrintsThatRowAlone) {
  const Proc p = probe({"--only=T3-memfd-sealed"});
  EXPECT_EQ(p.code, 0) << describe(p);
  EXPECT_EQ(count_results(p.out), 1u) << p.out;
  EXPECT_EQ(status_of(p.out, "T3-memfd-sealed"), "OK") << p.out;
  const std::string rest = std::to_string(extmem::test::kRowNames.size() - 1) + " rows not selected by --only ";
  const std::size_t summary = p.out.find("== summary");
  ASSERT_NE(summary, std::string::npos) << p.out;
  std::vector<std::string> table;
  for (const std::string& line : lines_of(p.out.substr(summary)))
    if (line.rfind("T", 0) == 0 || line.rfind("S1", 0) == 0) table.push_back(line.substr(0, line.find(' ')));
  EXPECT_EQ(table, std::vector<std::string>{"T3-memfd-sealed"}) << p.out;
  EXPECT_NE(p.out.find(rest, summary), std::string::npos) << p.out;
}

// Phase A lists the external semaphore properties per handle type and semaphore type; lavapipe offers none.
TEST_F(ProbeIntegration, DefaultRunPhaseAListsExternalSemaphores) {
  const std::string& out = default_run().out;
  for (const char* kind : {"OPAQUE_FD binary", "OPAQUE_FD timeline", "SYNC_FD binary", "SYNC_FD timeline"})
    EXPECT_NE(out.find(std::string("external semaphore ") + kind + ": export=no import=no compatible=0x0"),
              std::string::npos)
        << kind << "\n" << out.substr(0, 4000);
}

// The three T3 rows are OK with every decisive leg round-tripped.
TEST_F(ProbeIntegration, DefaultRunT3RowsOk) {
  for (const char* row : {"T3-memfd-cross-process", "T3-external-memory-host", "T3-client-memfd-server-import"}) {
    std::string line = result_line(default_run().out, row);
    EXPECT_EQ(status_of(default_run().out, row), "OK") << line;
    EXPECT_EQ(line.find("why:"), std::string::npos) << line;
    EXPECT_NE(line.find("mmap[D]=rt"), std::string::npos) << line;
  }
  EXPECT_NE(result_line(default_run().out, "T3-external-memory-host").find("hostimport[D]=rt"), std::string::npos);
  EXPECT_NE(result_line(default_run().out, "T3-client-memfd-server-import").find("hostimport[D]=rt"), std::string::npos);
}

// The T0 (Android-only) rows SKIP on Linux, each with a reason.
TEST_F(ProbeIntegration, DefaultRunT0RowsSkipWithReason) {
  for (const extmem::probe::RouteInfo& route : extmem::probe::routes()) {
    if (route.platform != "android") continue;
    const std::string& row = route.row;
    std::string line = result_line(default_run().out, row);
    EXPECT_EQ(status_of(default_run().out, row), "SKIP") << line;
    EXPECT_NE(why_of(line).find("Android"), std::string::npos) << "no reason: " << line;
  }
}

// The GLES rows are OK by default on lavapipe: phase A says zink serves GL and why, and each row names the
// renderer (docs/probe.md, "Which GL serves"; llvmpipe's FAIL is in gles_tests.cpp).
TEST_F(ProbeIntegration, DefaultRunGlesRowsOkOnZink) {
  EXPECT_NE(default_run().out.find("== phase A: GL driver: zink (requested auto)"), std::string::npos) << default_run().out;
  for (const std::string& row : kGlesRows) {
    std::string line = result_line(default_run().out, row);
    EXPECT_EQ(status_of(default_run().out, row), "OK") << line;
    // zink's GL_RENDERER names zink and then the Vulkan device it runs on, in words
    // that change with Mesa ("zink (llvmpipe (…))" in 22.3, "zink Vulkan 1.4(llvmpipe (…))" in 25).
    const std::size_t renderer = line.find("renderer=\"zink");
    EXPECT_NE(renderer, std::string::npos) << line;
    if (renderer != std::string::npos) EXPECT_NE(line.find("llvmpipe", renderer), std::string::npos) << line;
  }
}

// After the RESULT lines comes a summary table: a row per route with its status, and the counts.
TEST_F(ProbeIntegration, DefaultRunPrintsSummaryTable) {
  const std::string& out = default_run().out;
  std::size_t summary = out.find("== summary");
  ASSERT_NE(summary, std::string::npos) << out;
  EXPECT_GT(summary, out.rfind("RESULT ")) << "summary before the last RESULT line";
  std::vector<std::string> table = lines_of(out.substr(summary));
  for (const std::string& row : kRows) {
    bool found = false;
    for (const std::string& line : table) {
      std::istringstream in(line);
      std::string name, status;
      in >> name >> status;
      if (name == row) {
        found = true;
        EXPECT_EQ(status, status_of(out, row)) << line;
      }
    }
    EXPECT_TRUE(found) << "no summary line for " << row << "\n" << out;
  }
  std::map<std::string, int> n;
  for (const std::string& row : kRows) ++n[status_of(out, row)];
  std::string counts = std::to_string(n["OK"]) + " OK, " + std::to_string(n["PARTIAL"]) + " PARTIAL, " +
                       std::to_string(n["FAIL"]) + " FAIL, " + std::to_string(n["UNSUPPORTED"]) + " UNSUPPORTED, " +
                       std::to_string(n["SKIP"]) + " SKIP";
  EXPECT_NE(out.find(counts), std::string::npos) << counts << "\n" << out;
}

// The region window at the end of a 1 MiB allocation gives the same statuses as the default run.
TEST_F(ProbeIntegration, RegionsAtEndLargeSizeSameStatuses) {
  Proc p = probe({"--regions-at-end", "--size=1048576"});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_EQ(p.code, default_run().code) << describe(p);
  EXPECT_NE(p.out.find("size=1048576 bytes, regions at end"), std::string::npos) << p.out;
  for (const std::string& row : kRows)
    EXPECT_EQ(status_of(p.out, row), status_of(default_run().out, row)) << result_line(p.out, row);
}

// ---- --json ----

// The --json document validates against docs/probe-result.schema.json.
TEST_F(ProbeIntegration, JsonValidatesAgainstSchema) {
  ASSERT_TRUE(json_run().proc.code == extmem::probe::kExitOk || json_run().proc.code == extmem::probe::kExitFailed)
      << describe(json_run().proc);
  TempDir dir;
  std::string doc = dir.file("result.json");
  std::ofstream(doc) << json_run().text;
  Proc v = validate_json(kSchema, doc);
  EXPECT_EQ(v.code, 0) << "python3-jsonschema validation failed (is python3-jsonschema installed?)\n" << describe(v);
}

// Negative control: the same document with a bogus row status fails validation, so the schema bites.
TEST_F(ProbeIntegration, JsonSchemaRejectsBogusStatus) {
  json doc = json_doc();
  ASSERT_TRUE(doc.contains("rows") && !doc["rows"].empty());
  doc["rows"][0]["status"] = "MAYBE";
  TempDir dir;
  std::ofstream(dir.file("bogus.json")) << doc.dump(2);
  Proc v = validate_json(kSchema, dir.file("bogus.json"));
  EXPECT_EQ(v.code, 1) << describe(v);
  EXPECT_NE(v.out.find("MAYBE"), std::string::npos) << describe(v);
}

// Negative control: an undocumented field fails validation, so structural drift is caught.
TEST_F(ProbeIntegration, JsonSchemaRejectsUndocumentedField) {
  json doc = json_doc();
  ASSERT_TRUE(doc.contains("rows") && !doc["rows"].empty());
  doc["rows"][0]["surprise"] = 1;
  TempDir dir;
  std::ofstream(dir.file("drift.json")) << doc.dump(2);
  Proc v = validate_json(kSchema, dir.file("drift.json"));
  EXPECT_EQ(v.code, 1) << describe(v);
  EXPECT_NE(v.out.find("surprise"), std::string::npos) << describe(v);
}

// The JSON rows match the RESULT lines of the same run: names, order, status, trace and why.
TEST_F(ProbeIntegration, JsonRowsMatchTextOutput) {
  json doc = json_doc();
  const std::string& out = json_run().proc.out;
  ASSERT_TRUE(doc["rows"].is_array());
  ASSERT_EQ(doc["rows"].size(), count_results(out)) << out;
  std::size_t i = 0;
  for (const std::string& row : kRows) {
    const json& r = doc["rows"][i++];
    std::string line = result_line(out, row);
    EXPECT_EQ(r.value("row", ""), row);
    EXPECT_EQ(r.value("status", ""), status_of(out, row)) << line;
    std::string trace = r.value("trace", "");
    if (!trace.empty()) EXPECT_NE(line.find(" " + trace), std::string::npos) << trace << " vs " << line;
    EXPECT_EQ(why_of(line), r.value("why", "")) << line;
    const std::size_t legs_in_trace =
        trace.empty() ? 0 : static_cast<std::size_t>(std::count(trace.begin(), trace.end(), ' ')) + 1;
    EXPECT_EQ(r["legs"].size(), legs_in_trace) << trace;
  }
}

// The document records the exit code and the options of the run, and the schema header.
TEST_F(ProbeIntegration, JsonRecordsExitCodeAndOptions) {
  json doc = json_doc();
  EXPECT_EQ(doc.value("schema", ""), "extmem-probe-result");
  EXPECT_EQ(doc.value("schema_version", -1), extmem::probe::kJsonSchemaVersion);
  EXPECT_EQ(doc.value("exit_code", -1), json_run().proc.code);
  EXPECT_EQ(doc["options"].value("size", 0), 65536);
  EXPECT_EQ(doc["options"].value("regions_at_end", true), false);
  EXPECT_EQ(doc["vulkan"]["devices"].size(), 1u) << "this test expects lavapipe as the only device";
}

// A successful --json run leaves the file and no FILE.tmp behind.
TEST_F(ProbeIntegration, JsonTmpFileDoesNotRemain) {
  EXPECT_EQ(json_run().dir_entries, std::vector<std::string>{"result.json"});
}

// A FAIL row is written to the JSON too, with exit_code 1, and the document still validates.
TEST_F(ProbeIntegration, JsonOfFailedRunValidates) {
  TempDir dir;
  Proc p = probe({"--only=T1-opaque-fd", "--json=" + dir.file("r.json")},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:segv"}});
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  json doc = json::parse(read_file(dir.file("r.json")), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc.value("exit_code", -1), 1);
  json row;
  for (const json& r : doc["rows"])
    if (r.value("row", "") == "T1-opaque-fd") row = r;
  ASSERT_TRUE(row.is_object()) << doc["rows"];
  EXPECT_EQ(row.value("status", ""), "FAIL");
  EXPECT_NE(row.value("why", "").find("SIGSEGV"), std::string::npos) << row;
  EXPECT_NE(row["last_step"].value("server", "").find("serve"), std::string::npos) << row;
  Proc v = validate_json(kSchema, dir.file("r.json"));
  EXPECT_EQ(v.code, 0) << describe(v);
}

// ---- faults injected into the children (EXTMEM_TEST_FAULT) ----

// A server hung at "serve" is killed at --timeout: FAIL "timeout ... <step>", exit 1, the other row still runs OK.
TEST_F(ProbeIntegration, FaultHangTimesOutAndOtherRowStillRuns) {
  Proc p = probe({"--only=T1-opaque-fd,T3-memfd-cross-process", "--timeout=3"},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:hang"}}, 30);
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_FALSE(p.leftovers) << "a child outlived the probe";
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  std::string line = result_line(p.out, "T1-opaque-fd");
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "FAIL") << line;
  EXPECT_NE(why_of(line).find("timeout"), std::string::npos) << line;
  EXPECT_TRUE(names_step(why_of(line), "server", "serve")) << line;
  EXPECT_EQ(status_of(p.out, "T3-memfd-cross-process"), "OK") << p.out;
  // Killed by --timeout (not by this harness's 30 s, ASSERT above), and the why says after how long.
  EXPECT_NE(why_of(line).find("timeout after 3 s"), std::string::npos) << line;
}

// A server that aborts at "serve": FAIL "child died: SIGABRT in server: <step>", the parent survives.
TEST_F(ProbeIntegration, FaultAbortReportsSigabrtAndStep) {
  Proc p = probe({"--only=T1-opaque-fd,T3-memfd-cross-process", "--timeout=3"},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:abort"}});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  std::string why = why_of(result_line(p.out, "T1-opaque-fd"));
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "FAIL") << p.out;
  EXPECT_NE(why.find("SIGABRT"), std::string::npos) << why;
  EXPECT_TRUE(names_step(why, "server", "serve")) << why;
  EXPECT_EQ(status_of(p.out, "T3-memfd-cross-process"), "OK") << p.out;
}

// A server that segfaults at "serve": FAIL "child died: SIGSEGV in server: <step>".
TEST_F(ProbeIntegration, FaultSegvReportsSigsegvAndStep) {
  Proc p = probe({"--only=T1-opaque-fd", "--timeout=3"}, {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:segv"}});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  std::string why = why_of(result_line(p.out, "T1-opaque-fd"));
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "FAIL") << p.out;
  EXPECT_NE(why.find("SIGSEGV"), std::string::npos) << why;
  EXPECT_TRUE(names_step(why, "server", "serve")) << why;
}

// A crash of the half that does not send the report (here the client) still makes the row FAIL with the signal.
TEST_F(ProbeIntegration, FaultClientSegvReportsSigsegvAndStep) {
  Proc p = probe({"--only=T3-external-memory-host", "--timeout=3"},
                 {{"EXTMEM_TEST_FAULT", "T3-external-memory-host:client:serve:segv"}});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  std::string why = why_of(result_line(p.out, "T3-external-memory-host"));
  EXPECT_EQ(status_of(p.out, "T3-external-memory-host"), "FAIL") << p.out;
  EXPECT_NE(why.find("SIGSEGV"), std::string::npos) << why;
  EXPECT_TRUE(names_step(why, "client", "serve")) << why;
}

// The reporting half exits 7 without a report: FAIL "no report", naming the exit code.
TEST_F(ProbeIntegration, FaultExitWithoutReportIsNoReport) {
  Proc p = probe({"--only=T1-opaque-fd", "--timeout=3"},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:client:server checks region B:exit"}});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  std::string why = why_of(result_line(p.out, "T1-opaque-fd"));
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "FAIL") << p.out;
  EXPECT_NE(why.find("no report"), std::string::npos) << why;
  EXPECT_NE(why.find("client exit 7"), std::string::npos) << why;
  EXPECT_NE(why.find("server checks region B"), std::string::npos) << why;
}

// A frame with a bad magic is a FAIL "malformed message" of that row; the parent neither crashes nor hangs.
TEST_F(ProbeIntegration, FaultGarbageFrameIsMalformedMessage) {
  // --timeout=1h: a parent that waited for the timeout instead of failing the row
  // at once would not finish within this harness's limit (timed_out), whatever the machine's speed.
  Proc p = probe({"--only=T1-opaque-fd,T3-memfd-cross-process", "--timeout=1h"},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:garbage"}});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_TRUE(p.exited) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "FAIL") << p.out;
  EXPECT_NE(why_of(result_line(p.out, "T1-opaque-fd")).find("malformed message"), std::string::npos) << p.out;
  EXPECT_EQ(status_of(p.out, "T3-memfd-cross-process"), "OK") << p.out;
  // The failing half and its step: the frame itself ended the row, not a later timeout.
  EXPECT_TRUE(std::regex_search(why_of(result_line(p.out, "T1-opaque-fd")),
                                std::regex("^malformed message from server after step \"[^\"]*serve")))
      << p.out;
}

// A frame shorter than its header says is a FAIL "malformed message"; the parent neither crashes nor hangs.
TEST_F(ProbeIntegration, FaultTruncatedFrameIsMalformedMessage) {
  // --timeout=1h: a parent that waited for the timeout instead of failing the row
  // at once would not finish within this harness's limit (timed_out), whatever the machine's speed.
  Proc p = probe({"--only=T1-opaque-fd,T3-memfd-cross-process", "--timeout=1h"},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:truncate"}});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_TRUE(p.exited) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "FAIL") << p.out;
  EXPECT_NE(why_of(result_line(p.out, "T1-opaque-fd")).find("malformed message"), std::string::npos) << p.out;
  EXPECT_EQ(status_of(p.out, "T3-memfd-cross-process"), "OK") << p.out;
  // The failing half and its step: the frame itself ended the row, not a later timeout.
  EXPECT_TRUE(std::regex_search(why_of(result_line(p.out, "T1-opaque-fd")),
                                std::regex("^malformed message from server after step \"[^\"]*serve")))
      << p.out;
}

// A report that is not JSON is a FAIL "malformed report".
TEST_F(ProbeIntegration, FaultBadReportIsMalformedReport) {
  Proc p = probe({"--only=T1-opaque-fd", "--timeout=3"},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:badreport"}});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitFailed) << describe(p);
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "FAIL") << p.out;
  EXPECT_NE(why_of(result_line(p.out, "T1-opaque-fd")).find("malformed report"), std::string::npos) << p.out;
}

// A fault aimed at another row leaves this row alone (the hook matches ROW exactly).
TEST_F(ProbeIntegration, FaultForAnotherRowDoesNotApply) {
  Proc p = probe({"--only=T3-memfd-cross-process", "--timeout=3"},
                 {{"EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:segv"}});
  EXPECT_EQ(p.code, extmem::probe::kExitOk) << describe(p);
  EXPECT_EQ(status_of(p.out, "T3-memfd-cross-process"), "OK") << p.out;
}

// ---- usage errors: exit 2, a message naming the option and what is accepted, nothing run ----

struct UsageCase {
  const char* name;
  std::vector<std::string> args;
  std::vector<std::string> expect_in_stderr;
};

void PrintTo(const UsageCase& c, std::ostream* os) { *os << c.name; }

class ProbeIntegrationUsage : public ::testing::TestWithParam<UsageCase> {};

// Each bad option value exits 2 with a message naming the option and what is accepted, and runs no row.
TEST_P(ProbeIntegrationUsage, ExitsTwoNamingOptionAndAccepted) {
  const UsageCase& c = GetParam();
  Proc p = probe(c.args);
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_EQ(p.code, extmem::probe::kExitUsage) << describe(p);
  EXPECT_EQ(count_results(p.out), 0u) << describe(p);
  for (const std::string& s : c.expect_in_stderr) EXPECT_NE(p.err.find(s), std::string::npos) << "\"" << s << "\" not in:\n" << p.err;
}

std::vector<std::string> only_expectations() {
  std::vector<std::string> v = {"--only", "NoSuchRow"};
  v.insert(v.end(), kRows.begin(), kRows.end());
  return v;
}

INSTANTIATE_TEST_SUITE_P(
    ProbeIntegration, ProbeIntegrationUsage,
    ::testing::Values(
        UsageCase{"SizeNotMultiple100", {"--size=100"}, {"--size", "100", "multiple of 4096", "32768"}},
        UsageCase{"SizeNotMultiple4097", {"--size=4097"}, {"--size", "4097", "multiple of 4096", "32768"}},
        UsageCase{"SizeNotANumber", {"--size=abc"}, {"--size", "abc", "multiple of 4096"}},
        UsageCase{"SizeNegative", {"--size=-4096"}, {"--size", "-4096", "multiple of 4096"}},
        UsageCase{"SizeTooSmall", {"--size=4096"}, {"--size", "4096", "at least 32768"}},
        UsageCase{"SizeBiggerThanHeap", {"--size=1099511627776"}, {"--size", "1099511627776", "heap", "multiple of 4096"}},
        UsageCase{"OnlyUnknownRow", {"--only=NoSuchRow"}, only_expectations()},
        UsageCase{"TimeoutZero", {"--timeout=0"}, {"--timeout", "a duration from 1ms to 1h"}},
        UsageCase{"TimeoutNegative", {"--timeout=-1"}, {"--timeout", "-1", "a duration from 1ms to 1h"}},
        UsageCase{"DeviceIndexOutOfRange", {"--device=99"}, {"--device", "99", "INDEX", "UUID", "NAME", "llvmpipe"}},
        UsageCase{"DeviceNameUnknown", {"--device=nosuchgpu"}, {"--device", "nosuchgpu", "INDEX", "UUID", "llvmpipe"}},
        UsageCase{"JsonDirectoryMissing", {"--json=/nonexistent-dir/x.json"}, {"--json", "/nonexistent-dir/x.json", "ENOENT"}},
        UsageCase{"UnknownOption", {"--no-such-option"}, {"--no-such-option", "--help"}}),
    [](const ::testing::TestParamInfo<UsageCase>& info) { return std::string(info.param.name); });

// --json into a missing directory creates nothing there (nor the directory).
TEST_F(ProbeIntegration, JsonMissingDirectoryCreatesNothing) {
  Proc p = probe({"--json=/nonexistent-dir/x.json"});
  EXPECT_EQ(p.code, extmem::probe::kExitUsage) << describe(p);
  EXPECT_FALSE(fs::exists("/nonexistent-dir"));
}

// A usage error found before the run (bad --size) leaves neither the JSON file nor FILE.tmp.
TEST_F(ProbeIntegration, JsonUsageErrorLeavesNoFile) {
  TempDir dir;
  Proc p = probe({"--size=100", "--json=" + dir.file("x.json")});
  EXPECT_EQ(p.code, extmem::probe::kExitUsage) << describe(p);
  EXPECT_TRUE(dir.entries().empty());
}

// A usage error found after enumeration (--size bigger than the heap) leaves neither the JSON file nor FILE.tmp.
TEST_F(ProbeIntegration, JsonLateUsageErrorLeavesNoFile) {
  TempDir dir;
  Proc p = probe({"--size=1099511627776", "--json=" + dir.file("x.json")});
  EXPECT_EQ(p.code, extmem::probe::kExitUsage) << describe(p);
  EXPECT_TRUE(dir.entries().empty());
}

// --json naming a directory is a usage error found before any row runs, not a failure after the whole run.
TEST_F(ProbeIntegration, JsonPathIsDirectoryIsUsageError) {
  TempDir dir;
  fs::create_directory(dir.file("sub"));
  Proc p = probe({"--only=T3-memfd-cross-process", "--json=" + dir.file("sub")});
  EXPECT_EQ(p.code, extmem::probe::kExitUsage) << describe(p);
  EXPECT_EQ(count_results(p.out), 0u) << describe(p);
  EXPECT_NE(p.err.find("--json"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("director"), std::string::npos) << p.err;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"sub"});
}

// ---- devices ----

// --list-devices prints lavapipe's llvmpipe device, exits 0 and runs no row.
TEST_F(ProbeIntegration, ListDevicesPrintsLlvmpipe) {
  Proc p = probe({"--list-devices"});
  EXPECT_EQ(p.code, extmem::probe::kExitOk) << describe(p);
  EXPECT_NE(p.out.find("llvmpipe"), std::string::npos) << p.out;
  EXPECT_EQ(count_results(p.out), 0u) << p.out;
}

// Runs one route on --device=SPEC and checks llvmpipe was selected and the route worked.
void expect_selects_llvmpipe(const std::string& spec) {
  Proc p = probe({"--device=" + spec, "--only=T1-opaque-fd"});
  EXPECT_EQ(p.code, extmem::probe::kExitOk) << describe(p);
  bool selected = false;
  for (const std::string& line : lines_of(p.out))
    selected = selected || (line.find("llvmpipe") != std::string::npos && line.find("<- selected") != std::string::npos);
  EXPECT_TRUE(selected) << p.out;
  EXPECT_EQ(status_of(p.out, "T1-opaque-fd"), "OK") << p.out;
}

// --device=0 selects device 0 (llvmpipe).
TEST_F(ProbeIntegration, DeviceByIndexSelectsLlvmpipe) { expect_selects_llvmpipe("0"); }

// --device=llvmpipe selects it by name substring.
TEST_F(ProbeIntegration, DeviceByNameSelectsLlvmpipe) { expect_selects_llvmpipe("llvmpipe"); }

// --device=<deviceUUID from the JSON> selects it by UUID.
TEST_F(ProbeIntegration, DeviceByUuidSelectsLlvmpipe) {
  json doc = json_doc();
  std::string uuid = doc["vulkan"]["devices"][0].value("device_uuid", "");
  ASSERT_EQ(uuid.size(), 32u) << uuid;
  expect_selects_llvmpipe(uuid);
}

// ---- in-process run(): fd and child hygiene of the parent ----

extmem::probe::ProbeOptions in_process_options() {
  extmem::probe::ProbeOptions o;
  o.worker = kBinary;
  return o;
}

// Sets (or, with nullptr, unsets) an environment variable for the children of an
// in-process run; restores it at scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// This process's fd table: fd number -> what it refers to (readlink of /proc/self/fd/N),
// without the directory fd used to read it.
std::map<int, std::string> fd_table() {
  std::map<int, std::string> table;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/self/fd", ec)) {
    const int fd = std::stoi(e.path().filename().string());
    std::error_code link_ec;
    const fs::path target = fs::read_symlink(e.path(), link_ec);
    if (link_ec) continue;  // the iterator's own directory fd, closed by now
    table[fd] = target.string();
  }
  return table;
}

std::string describe_fds(const std::map<int, std::string>& t) {
  std::string s;
  for (const auto& [fd, target] : t) s += std::to_string(fd) + " -> " + target + "\n";
  return s;
}

// Makes this process the subreaper of its descendants, so a grandchild the probe
// orphans is reparented here (not to init) and shows up in waitpid(-1, ...).
// This process as the subreaper of what the test starts, for the test's scope:
// ctest runs a whole suite in one process, so the flag must not outlive the
// test. At scope end the flag goes and whatever was reparented here meanwhile
// (a sanitizer's tracer or symbolizer that outlived its process) is waited for,
// at most 30 s, then killed, so the next test starts with no child.
class Subreaper {
 public:
  Subreaper() { EXPECT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0) << std::strerror(errno); }
  ~Subreaper() {
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    for (int waited_ms = 0; waited_ms < 35'000; waited_ms += 10) {
      const pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
      if (pid < 0) return;  // ECHILD: none left
      if (pid > 0) continue;
      if (waited_ms >= 30'000) kill_children();
      ::usleep(10'000);
    }
  }
  Subreaper(const Subreaper&) = delete;
  Subreaper& operator=(const Subreaper&) = delete;

 private:
  static void kill_children() {
    std::ifstream kids("/proc/self/task/" + std::to_string(::getpid()) + "/children");
    for (pid_t pid; kids >> pid;) ::kill(pid, SIGKILL);
  }
};

// No child of this process is left, running or zombie (a running one makes WNOHANG return 0, a zombie its pid).
// An orphaned llvm-symbolizer (sanitizer builds, see only_symbolizers_in_group) is reaped and not counted.
void expect_no_children_left() {
  reap_orphaned_symbolizers();
  errno = 0;
  const pid_t left = ::waitpid(-1, nullptr, WNOHANG);
  EXPECT_EQ(left, -1) << (left == 0 ? "a descendant is still running" : "reaped a zombie: pid " + std::to_string(left));
  EXPECT_EQ(errno, ECHILD);
}

// A full in-process run leaves the fd table exactly as it found it (same numbers,
// same files), and neither a child nor an orphaned grandchild behind.
TEST_F(ProbeIntegration, InProcessRunKeepsFdTableAndLeavesNoDescendants) {
  ScopedEnv no_fault("EXTMEM_TEST_FAULT", nullptr);
  Subreaper subreaper;
  std::ostringstream out, err;
  const auto before = fd_table();
  int code = extmem::probe::run(in_process_options(), out, err);
  const auto after = fd_table();
  EXPECT_EQ(code, exit_code_for(out.str())) << out.str() << err.str();
  EXPECT_EQ(count_results(out.str()), kRows.size()) << out.str();
  EXPECT_EQ(after, before) << "before:\n" << describe_fds(before) << "after:\n" << describe_fds(after);
  expect_no_children_left();
}

// The same for the `extmem probe` process: run under this process as subreaper,
// every process it started has been reaped by the time it exits (none is
// reparented here), and its process group is empty.
TEST_F(ProbeIntegration, CliRunLeavesNoDescendants) {
  Subreaper subreaper;
  Proc p = probe({"--soak=0.2"});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_TRUE(p.exited) << describe(p);
  EXPECT_FALSE(p.leftovers) << describe(p);
  EXPECT_EQ(count_results(p.out), kRows.size()) << p.out;
  expect_no_children_left();
}

// --timeout bounds each route, not the drivers' start-up in the first worker
// (phase A): with a limit no driver starts within, the run still gets past phase A
// and every asked-for row gets its line. It once ended the run with exit 3 when a
// slow start (a sanitizer build on a busy machine) outlasted --timeout=1.
TEST_F(ProbeIntegration, RouteTimeoutDoesNotBoundPhaseA) {
  Proc p = probe({"--only=T3-memfd-sealed,T3-memfd-cross-process", "--timeout=1ms"});
  ASSERT_FALSE(p.timed_out) << describe(p);
  EXPECT_NE(p.code, extmem::probe::kExitCannotRun) << describe(p);
  EXPECT_NE(p.out.find("== phase A: Vulkan"), std::string::npos) << describe(p);
  for (const char* row : {"T3-memfd-sealed", "T3-memfd-cross-process"})
    EXPECT_NE(result_line(p.out, row), "") << row << "\n" << describe(p);
}

// What phase A says when XDG_RUNTIME_DIR was unset; group 1 is the private directory.
const std::regex kPrivateRuntimeDirLine(
    "\n  XDG_RUNTIME_DIR: unset; the probe's processes use a private (/[^ ]+) \\(0700, removed at exit\\)\n");

// With XDG_RUNTIME_DIR unset (a fresh root shell) the probe's processes get a
// private one for the run, phase A says so, and afterwards it is gone and the
// variable unset again.
TEST_F(ProbeIntegration, UnsetRuntimeDirGetsAPrivateOneForTheRun) {
  ScopedEnv no_fault("EXTMEM_TEST_FAULT", nullptr);
  ScopedEnv unset("XDG_RUNTIME_DIR", nullptr);
  extmem::probe::ProbeOptions o = in_process_options();
  o.only = {"T3-memfd-sealed"};
  std::ostringstream out, err;
  EXPECT_EQ(extmem::probe::run(o, out, err), 0) << out.str() << err.str();
  std::smatch m;
  const std::string text = out.str();
  ASSERT_TRUE(std::regex_search(text, m, kPrivateRuntimeDirLine)) << text;
  EXPECT_FALSE(std::filesystem::exists(m.str(1))) << m.str(1);
  EXPECT_EQ(std::getenv("XDG_RUNTIME_DIR"), nullptr);
}

// A row whose worker opens GL: on lavapipe that is zink, whose Vulkan instance loads
// Mesa's device-select layer, which looks for a Wayland display; libwayland-client
// then prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment."
// twice when the variable is unset or not absolute (seen with TMPDIR=/nonexistent,
// where no private directory can be made). A T3 row opens no GL: no such line either way.
const char* const kGlRow = "--only=T1-gles-memobj-fd-same-proc";

// One that is not an absolute path to a directory is replaced the same way, and no
// driver prints "XDG_RUNTIME_DIR is invalid or not set"; a valid one is left alone.
TEST_F(ProbeIntegration, InvalidRuntimeDirIsReplacedAndValidOneKept) {
  for (const char* value : {"", "relative/dir", "/nonexistent/extmem-runtime"}) {
    const Proc p = probe({kGlRow}, {{"XDG_RUNTIME_DIR", value}});
    EXPECT_EQ(p.code, 0) << describe(p);
    EXPECT_NE(p.out.find(std::string("XDG_RUNTIME_DIR: \"") + value + "\" is not an absolute path to a directory; the "
                         "probe's processes use a private "), std::string::npos) << describe(p);
    EXPECT_EQ(p.err.find("XDG_RUNTIME_DIR is invalid"), std::string::npos) << describe(p);
  }
  TempDir dir;
  const std::string valid = dir.file("run");
  fs::create_directory(valid);
  const Proc p = probe({"--only=T3-memfd-sealed"}, {{"XDG_RUNTIME_DIR", valid}});
  EXPECT_EQ(p.code, 0) << describe(p);
  EXPECT_EQ(p.out.find("XDG_RUNTIME_DIR"), std::string::npos) << describe(p);
}

// Started without XDG_RUNTIME_DIR, as from a fresh root shell: nothing on stderr
// names it, and the directory phase A names is gone after.
TEST_F(ProbeIntegration, UnsetRuntimeDirNoDriverErrorAndNoDirectoryLeft) {
  const Proc p = run_cmd({"env", "-u", "XDG_RUNTIME_DIR", kBinary, "probe", kGlRow});
  EXPECT_EQ(p.code, 0) << describe(p);
  EXPECT_EQ(p.err.find("XDG_RUNTIME_DIR"), std::string::npos) << describe(p);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(p.out, m, kPrivateRuntimeDirLine)) << describe(p);
  EXPECT_FALSE(std::filesystem::exists(m.str(1))) << m.str(1);
}

// A run ended by SIGINT (^C), SIGTERM or SIGHUP while a route hangs (fault hook)
// still removes its private directory, and dies of that signal as before. The
// signal is sent once phase A has named the directory on stdout.
TEST_F(ProbeIntegration, SignalledRunRemovesItsPrivateRuntimeDir) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    int out[2];
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    const char* argv[] = {"env", "-u", "XDG_RUNTIME_DIR", "EXTMEM_TEST_FAULT=T3-memfd-cross-process:server:mmap:hang",
                          kBinary.c_str(), "probe", "--only=T3-memfd-cross-process", nullptr};
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::dup2(out[1], 1);
      ::signal(sig, SIG_DFL);  // as from an interactive shell: a background job's would be ignored
      ::execvp(argv[0], const_cast<char* const*>(argv));
      ::_exit(127);
    }
    ::close(out[1]);
    ASSERT_GT(pid, 0);
    ::setpgid(pid, pid);
    std::string text;
    std::smatch m;
    bool named = false;
    char buf[4096];
    while (!named) {
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      named = std::regex_search(text, m, kPrivateRuntimeDirLine);
    }
    if (named) {
      EXPECT_TRUE(std::filesystem::is_directory(m.str(1))) << text;
      ::kill(pid, sig);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::kill(-pid, SIGKILL);  // its workers, had any outlived it
    ::close(out[0]);        // only now: a write to a pipe without a reader would end it by SIGPIPE
    ASSERT_TRUE(named) << text;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status << "\n" << text;
    EXPECT_FALSE(std::filesystem::exists(m.str(1))) << m.str(1);
  }
}

// A crashing and a hanging child (fault hooks) leave no descendant of the CLI either.
TEST_F(ProbeIntegration, CliFaultRunsLeaveNoDescendants) {
  Subreaper subreaper;
  for (const char* fault : {"T1-opaque-fd:server:serve:segv", "T3-memfd-cross-process:server:mmap:hang"}) {
    // In a sanitizer build a child that exits runs LeakSanitizer, which forks a tracer;
    // when the probe kills that child mid-check (its peer crashed or hung), the tracer is
    // orphaned to this subreaper: the sanitizer's process, not the probe's. Leak checks
    // of killed children are meaningless anyway, so they are off for these runs only.
    Proc p = probe({"--only=T1-opaque-fd,T3-memfd-cross-process", "--timeout=1"},
                   {{"EXTMEM_TEST_FAULT", fault},
                    {"ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1:handle_segv=0:handle_abort=0"}});
    ASSERT_FALSE(p.timed_out) << fault << "\n" << describe(p);
    EXPECT_EQ(p.code, extmem::probe::kExitFailed) << fault << "\n" << describe(p);
    // (p.leftovers, the process-group check, is FaultHang…/FaultSegv…'s; here the
    // question is whether anything was orphaned to this subreaper.)
    expect_no_children_left();
  }
}

// A full run leaves the parent's open fd count unchanged.
TEST_F(ProbeIntegration, InProcessRunKeepsFdCount) {
  ScopedEnv no_fault("EXTMEM_TEST_FAULT", nullptr);
  std::ostringstream out, err;
  const std::size_t before = extmem::os::count_open_fds();
  int code = extmem::probe::run(in_process_options(), out, err);
  const std::size_t after = extmem::os::count_open_fds();
  EXPECT_EQ(code, exit_code_for(out.str())) << out.str() << err.str();
  EXPECT_NE(out.str().find("RESULT T1-opaque-fd OK"), std::string::npos) << out.str();
  EXPECT_EQ(after, before);
}

// A full run leaves no child behind, not even a zombie.
TEST_F(ProbeIntegration, InProcessRunLeavesNoChildren) {
  ScopedEnv no_fault("EXTMEM_TEST_FAULT", nullptr);
  std::ostringstream out, err;
  int code = extmem::probe::run(in_process_options(), out, err);
  EXPECT_EQ(code, exit_code_for(out.str())) << out.str() << err.str();
  EXPECT_EQ(count_results(out.str()), kRows.size()) << out.str();
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// A run whose child crashes keeps the fd count and leaves no child.
TEST_F(ProbeIntegration, InProcessCrashedChildKeepsFdCountAndLeavesNoChildren) {
  ScopedEnv fault("EXTMEM_TEST_FAULT", "T1-opaque-fd:server:serve:segv");
  extmem::probe::ProbeOptions o = in_process_options();
  o.only = {"T1-opaque-fd"};
  std::ostringstream out, err;
  const std::size_t before = extmem::os::count_open_fds();
  int code = extmem::probe::run(o, out, err);
  const std::size_t after = extmem::os::count_open_fds();
  EXPECT_EQ(code, extmem::probe::kExitFailed) << out.str() << err.str();
  EXPECT_NE(out.str().find("SIGSEGV"), std::string::npos) << out.str();
  EXPECT_EQ(after, before);
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// A run whose child hangs past --timeout keeps the fd count and leaves no child.
TEST_F(ProbeIntegration, InProcessHungChildKeepsFdCountAndLeavesNoChildren) {
  ScopedEnv fault("EXTMEM_TEST_FAULT", "T3-memfd-cross-process:server:mmap:hang");
  extmem::probe::ProbeOptions o = in_process_options();
  o.only = {"T3-memfd-cross-process"};
  o.timeout = std::chrono::seconds(1);
  std::ostringstream out, err;
  const std::size_t before = extmem::os::count_open_fds();
  int code = extmem::probe::run(o, out, err);
  const std::size_t after = extmem::os::count_open_fds();
  EXPECT_EQ(code, extmem::probe::kExitFailed) << out.str() << err.str();
  EXPECT_NE(out.str().find("timeout"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("mmap(received memfd)"), std::string::npos) << out.str();
  EXPECT_EQ(after, before);
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
