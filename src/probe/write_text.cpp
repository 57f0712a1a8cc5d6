// The text writer: what `extmem probe` prints, from what find() returned.
#include <algorithm>
#include <chrono>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "extmem/probe/failure_codes.h"
#include "extmem/probe/write.h"
#include "probe/parent/cuda_phase_a.h"
#include "probe/parent/fd_check.h"
#include "probe/parent/measure_row.h"
#include "probe/parent/phase_a.h"
#include "probe/parent/row_result.h"

namespace extmem::probe {

void write_found(std::ostream& out, const PhaseA& a) {
  const vk::DeviceInfo& dev = a.device();
  print_context(out, a.context);
  print_vulkan(out, a.vulkan, static_cast<int>(a.selected), false);
  print_gl_driver(out, a.gl_driver, a.gles);
  print_gles(out, a.gles, dev);
  print_cuda(out, a.cuda, dev.device_uuid);
  print_fd_transport(out, a.fd_transport);
}

void write_side(std::ostream& out, const char* which, const SideContext& c) {
  std::string ns;
  for (const auto& [kind, id] : c.namespaces) ns += fmt::format(" {}", id);
  out << fmt::format("  {}: uid={} gid={} pid={} hostname={} label={} /dev/shm={}\n    cgroup={}\n    ns:{}\n", which,
                     c.uid, c.gid, c.pid, c.hostname, c.security_label, c.dev_shm, c.cgroup, ns);
}

void write_peer(std::ostream& out, const PeerFinding& p) {
  out << fmt::format("== peer: the serving side at {} (extmem {}) runs the {} halves; run id {}\n", p.endpoint,
                     p.peer_build, p.served_role, p.run_id);
  write_side(out, "here", p.here);
  write_side(out, "peer", p.peer);
  if (p.boundary.empty())
    out << "  boundary: none (same uid, gid, namespaces, cgroup, security label, /dev/shm and hostname)\n";
  for (const BoundaryFact& f : p.boundary) out << fmt::format("  boundary: {} [{}]\n", f.text, f.fact);
}

void write_phase_a(std::ostream& out, const PhaseA& a, const ProbeOptions& o) {
  write_found(out, a);
  if (a.peer) write_peer(out, *a.peer);
  out << fmt::format("== routes (size={} bytes, regions at {}, timeout={:g} s{}{}{})\n", o.size,
                     o.regions_at_end ? "end" : "start", std::chrono::duration<double>(o.timeout).count(),
                     o.soak > std::chrono::nanoseconds(0)
                         ? fmt::format(", soak={:g} s", std::chrono::duration<double>(o.soak).count())
                         : std::string(),
                     o.measure ? fmt::format(", measure={} bytes x {}", o.measure_size, o.measure_repeats) : std::string(),
                     o.memory_type != kDefaultMemoryType ? ", memory-type=" + to_string(o.memory_type) : std::string());
}

void write_device_list(std::ostream& out, const PhaseA& a) {
  print_vulkan(out, a.vulkan, static_cast<int>(a.selected), true);
}

std::string result_line(const RowResult& r) {
  std::string line = fmt::format("RESULT {} {}", r.row, to_string(r.verdict.status));
  if (!r.legs.empty()) line += " " + trace(r.legs);
  if (!r.verdict.why.empty()) line += " why: " + r.verdict.why;
  std::vector<std::string> detail = r.detail;
  for (const Leg& l : r.legs) {
    std::string text = l.failed_step.empty() ? "" : l.failed_step + (l.code.empty() ? "" : " -> " + l.code);
    if (!l.note.empty()) text += (text.empty() ? "" : " ") + l.note;
    // Informational legs never reach why:, so their failures are told here; text why: already
    // holds is not told twice.
    const bool told = r.verdict.why.find(text) != std::string::npos;  // error-text: display only
    if (!text.empty() && !told) detail.push_back(l.name + ": " + text);
  }
  if (!detail.empty()) line += fmt::format(" | {}", fmt::join(detail, "; "));
  return line;
}

void write_row(std::ostream& out, const RowResult& r) {
  out << result_line(r) << "\n";
  // Its own line, so the RESULT line's grammar is unchanged.
  if (const FailureCode* c = failure_code(r)) out << fmt::format("  code: {} {} {}\n", c->id, to_string(c->klass), c->name);
  if (r.measure) out << measure_line(*r.measure) << "\n";
}

std::array<int, 5> count_statuses(const std::vector<RowResult>& rows) {
  std::array<int, 5> counts{};
  for (const RowResult& r : rows) ++counts[static_cast<std::size_t>(r.verdict.status)];
  return counts;
}

std::string not_selected_line(const std::vector<RowResult>& rows, const ProbeOptions& o) {
  const auto n = std::count_if(rows.begin(), rows.end(), [&](const RowResult& r) { return !selected(o, r.row); });
  if (n == 0) return {};
  std::vector<std::string> by;
  if (!o.only.empty()) by.emplace_back("--only");
  if (!o.groups.empty()) by.push_back(fmt::format("--only-{}", fmt::join(o.groups, "/--only-")));
  return fmt::format("{} row{} not selected by {} (SKIP; the JSON lists them)", n, n == 1 ? "" : "s",
                     fmt::join(by, " and "));
}

void write_summary(std::ostream& out, const std::vector<RowResult>& rows) { write_summary(out, rows, ProbeOptions{}); }

void write_summary(std::ostream& out, const std::vector<RowResult>& rows, const ProbeOptions& o) {
  out << "\n== summary\n";
  std::size_t width = 4;
  for (const RowResult& r : rows) width = std::max(width, r.row.size());
  out << fmt::format("{:<{}}  {:<11}  {}\n", "row", width, "status", "legs / reason");
  const std::array<int, 5> counts = count_statuses(rows);
  for (const RowResult& r : rows) {
    if (!selected(o, r.row)) continue;
    // A row that did not run has only notrun legs; its reason says more than they do.
    bool not_run = did_not_run(r.verdict.status);
    std::string rest = r.legs.empty() || not_run ? r.verdict.why : trace(r.legs);
    out << fmt::format("{:<{}}  {:<11}  {}\n", r.row, width, to_string(r.verdict.status), rest);
  }
  if (std::string rest = not_selected_line(rows, o); !rest.empty()) out << rest << "\n";
  out << fmt::format("{} OK, {} PARTIAL, {} FAIL, {} UNSUPPORTED, {} SKIP\n", counts[0], counts[1], counts[2],
                     counts[3], counts[4]);
}

}  // namespace extmem::probe
