// extmem::probe::run(): the text, JSON and JUnit writers composed over find(),
// as `extmem probe` prints and writes them, and the --output and --verdict-file
// of a launch without a shell (docs/probe.md).
#include <chrono>
#include <memory>
#include <optional>
#include <streambuf>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "extmem/os/file.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/fleet_write.h"
#include "extmem/probe/health.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/write.h"
#include "probe/parent/output_file.h"

namespace extmem::probe {

std::string memory_type_suffix(unsigned index) { return fmt::format("@mt{}", index); }

namespace {

// Wall-clock time, Unix seconds: the timestamps of the Prometheus file and the CTRF report.
double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The run proper, text to `out`. Returns the exit code; `problem` is set to what
// ended the run when the probe itself could not finish (printed by the caller);
// `health` is the run's health once the rows are known.
int run_text(const ProbeOptions& o, std::ostream& out, std::vector<RowResult>& rows, std::string& problem,
             std::optional<Health>& health) {
  const double start = unix_seconds();
  FindCallbacks stream;
  stream.phase_a = [&](const PhaseA& a) {
    write_phase_a(out, a, o);
    out.flush();
  };
  // Only the rows asked for are printed as they come; the rest are one line at the end.
  stream.row = [&](const RowResult& r) {
    if (!selected(o, r.row)) return;
    write_row(out, r);
    out.flush();
  };
  auto found = find(o, stream);
  if (!found) {
    const Error& e = found.error();
    problem = (e.step.empty() ? "" : e.step + ": ") + e.detail;
    return exit_code_for(e);
  }
  if (o.list_devices) {
    write_device_list(out, found->phase_a);
    out.flush();
    return kExitOk;
  }
  rows = found->rows;
  if (std::string rest = not_selected_line(found->rows, o); !rest.empty()) out << rest << "\n";
  write_summary(out, found->rows, o);
  // validate() read the baseline already; a file changed since is read again, and refused the same way.
  std::optional<std::vector<Expectation>> baseline;
  if (!o.expect_path.empty()) {
    auto read = read_baseline(o.expect_path);
    if (!read) {
      problem = read.error().step + ": " + read.error().detail;
      return kExitUsage;
    }
    baseline = std::move(*read);
  }
  health = assess(*found, o, baseline ? &*baseline : nullptr);
  const bool fleet = !o.require.empty() || !o.require_groups.empty() || baseline;
  if (fleet) write_health(out, *health);
  out.flush();
  const double end = unix_seconds();
  std::vector<std::pair<std::string, std::string>> files;
  if (!o.json_path.empty()) files.emplace_back(o.json_path, json_document(*found, o, &*health));
  if (!o.junit_path.empty()) files.emplace_back(o.junit_path, junit_document(*found));
  if (!o.prometheus_path.empty()) files.emplace_back(o.prometheus_path, prometheus_text(*found, *health, end));
  if (!o.ctrf_path.empty())
    files.emplace_back(o.ctrf_path, ctrf_document(*found, *health, static_cast<long long>(start * 1000),
                                                  static_cast<long long>(end * 1000)));
  // Each through a temporary file and rename(2): node_exporter never reads half a file.
  for (const auto& [path, text] : files) {
    if (auto s = os::write_file_atomically(path, text); !s) {
      problem = s.error().message();
      return kExitCannotRun;
    }
  }
  // With required rows or a baseline the exit follows the health; otherwise any FAIL or PARTIAL row.
  return fleet ? exit_code(*health) : found->exit_code();
}

// The null stream of --npd without --output: the text is made, and dropped.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c == traits_type::eof() ? 0 : c; }
};

}  // namespace

int run(const ProbeOptions& o, std::ostream& out, std::ostream& err) {
  // Checked before anything is created, so a refused run leaves no --output or
  // --verdict-file behind (find() checks again, for its own callers).
  if (auto v = validate(o); !v) {
    err << "extmem probe: " << v.error().step << ": " << v.error().detail << "\n";
    if (o.npd) out << npd_unknown_line(v.error().step + ": " + v.error().detail) << "\n";
    return kExitUsage;  // 2: also NPD's "unknown"
  }
  // --npd: stdout carries exactly one line (NPD's plugin contract); the text goes to --output or nowhere.
  NullBuffer null_buffer;
  std::ostream null_out(&null_buffer);
  std::ostream& text_out = o.npd ? null_out : out;
  std::unique_ptr<OutputFile> file;
  if (!o.output_path.empty()) {
    auto created = OutputFile::create(o.output_path);
    if (!created) {
      err << "extmem probe: " << created.error().step << ": " << created.error().detail << ", "
          << created.error().code << "\n";
      return kExitUsage;
    }
    file = std::move(*created);
  }
  std::vector<RowResult> rows;
  std::string problem;
  std::optional<Health> health;
  int code = run_text(o, file ? file->stream() : text_out, rows, problem, health);
  if (!problem.empty()) {
    err << "extmem probe: " << problem << "\n";
    // The file is the only output a launcher without a shell may keep: it gets the complaint too.
    if (file) file->stream() << "extmem probe: " << problem << "\n";
  }
  if (file) {
    if (auto s = file->finish(); !s) {
      problem = s.error().detail + ", " + s.error().code;
      err << "extmem probe: --output: " << problem << "\n";
      code = kExitCannotRun;
    }
  }
  if (!o.verdict_path.empty()) {
    // Through a temporary file and rename(2): a probe killed at any point leaves
    // the previous verdict or none, never half a line.
    if (auto s = os::write_file_atomically(o.verdict_path, verdict_line(code, rows, problem)); !s) {
      err << "extmem probe: --verdict-file: " << s.error().message() << "\n";
      code = kExitCannotRun;
    }
  }
  if (o.npd) {
    // 0 OK, 1 problem, 2 unknown: a run that could not decide (no driver, a file not written) is unknown.
    if (health && (code == kExitOk || code == kExitFailed)) {
      out << npd_line(*health) << "\n";
      return health->ok ? kNpdOk : kNpdProblem;
    }
    out << npd_unknown_line(problem.empty() ? "the probe ended without a verdict" : problem) << "\n";
    return kNpdUnknown;
  }
  return code;
}

}  // namespace extmem::probe
