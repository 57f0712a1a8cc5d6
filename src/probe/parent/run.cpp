// extmem::probe::run(): the text, JSON and JUnit writers composed over find(),
// as `extmem probe` prints and writes them, and the --output and --verdict-file
// of a launch without a shell (docs/probe.md).
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "extmem/os/file.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/write.h"
#include "probe/parent/output_file.h"

namespace extmem::probe {

std::string memory_type_suffix(unsigned index) { return fmt::format("@mt{}", index); }

namespace {

// The run proper, text to `out`. Returns the exit code; `problem` is set to what
// ended the run when the probe itself could not finish (printed by the caller).
int run_text(const ProbeOptions& o, std::ostream& out, std::vector<RowResult>& rows, std::string& problem) {
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
  out.flush();
  if (!o.json_path.empty()) {
    if (auto s = os::write_file_atomically(o.json_path, json_document(*found, o)); !s) {
      problem = s.error().message();
      return kExitCannotRun;
    }
  }
  if (!o.junit_path.empty()) {
    if (auto s = os::write_file_atomically(o.junit_path, junit_document(*found)); !s) {
      problem = s.error().message();
      return kExitCannotRun;
    }
  }
  return found->exit_code();
}

}  // namespace

int run(const ProbeOptions& o, std::ostream& out, std::ostream& err) {
  // Checked before anything is created, so a refused run leaves no --output or
  // --verdict-file behind (find() checks again, for its own callers).
  if (auto v = validate(o); !v) {
    err << "extmem probe: " << v.error().step << ": " << v.error().detail << "\n";
    return kExitUsage;
  }
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
  int code = run_text(o, file ? file->stream() : out, rows, problem);
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
  return code;
}

}  // namespace extmem::probe
