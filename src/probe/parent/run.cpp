// extmem::probe::run(): the text, JSON and JUnit writers composed over find(),
// as `extmem probe` prints and writes them.
#include <ostream>

#include <fmt/format.h>

#include "extmem/os/file.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/write.h"

namespace extmem::probe {

std::string memory_type_suffix(unsigned index) { return fmt::format("@mt{}", index); }

int run(const ProbeOptions& o, std::ostream& out, std::ostream& err) {
  FindCallbacks stream;
  stream.phase_a = [&](const PhaseA& a) {
    write_phase_a(out, a, o);
    out.flush();
  };
  stream.row = [&](const RowResult& r) {
    write_row(out, r);
    out.flush();
  };
  auto found = find(o, stream);
  if (!found) {
    const Error& e = found.error();
    err << "extmem probe: " << (e.step.empty() ? "" : e.step + ": ") << e.detail << "\n";
    return exit_code_for(e);
  }
  if (o.list_devices) {
    write_device_list(out, found->phase_a);
    return kExitOk;
  }
  write_summary(out, found->rows);
  if (!o.json_path.empty()) {
    if (auto s = os::write_file_atomically(o.json_path, json_document(*found, o)); !s) {
      err << "extmem probe: " << s.error().message() << "\n";
      return kExitCannotRun;
    }
  }
  if (!o.junit_path.empty()) {
    if (auto s = os::write_file_atomically(o.junit_path, junit_document(*found)); !s) {
      err << "extmem probe: " << s.error().message() << "\n";
      return kExitCannotRun;
    }
  }
  return found->exit_code();
}

}  // namespace extmem::probe
