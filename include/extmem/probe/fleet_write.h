// The fleet writers (docs/fleet.md): the health section of the text output, the
// node-problem-detector line, the Prometheus textfile and the CTRF report.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

#include "extmem/probe/findings.h"
#include "extmem/probe/health.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

/// NPD's default max_output_length (pkg/custompluginmonitor/types/config.go), bytes.
inline constexpr std::size_t kNpdMaxOutput = 80;

/// Exit codes of --npd, NPD's plugin contract: 0 OK, 1 problem, 2 unknown.
enum NpdExit : int { kNpdOk = 0, kNpdProblem = 1, kNpdUnknown = 2 };

/// "== health" section: the required rows and every problem with its code.
void write_health(std::ostream& out, const Health& h);

/// The one --npd line, without a newline, at most `max_bytes` bytes (cut on a
/// UTF-8 character boundary): "OK: N required row(s) OK" / "OK: no row failed";
/// "<row> <STATUS> <code> at <step>" for the first problem.
std::string npd_line(const Health& h, std::size_t max_bytes = kNpdMaxOutput);

/// The same for a run that could not decide (exit 2): "unknown: <why>".
std::string npd_unknown_line(const std::string& why, std::size_t max_bytes = kNpdMaxOutput);

/// The Prometheus text exposition for node_exporter's textfile collector: one
/// gauge per row (status as its RowStatus number, labels row, code, device,
/// device_uuid, driver, driver_version, fd_transport), --measure medians in
/// bytes per second and seconds, the health, the run's Unix time (`unix_time`,
/// seconds) and its duration (seconds).
std::string prometheus_text(const Findings& f, const Health& h, double unix_time);

/// The CTRF report (https://ctrf.io, JSON): one test per row; OK passed, FAIL and
/// PARTIAL failed, SKIP skipped, UNSUPPORTED other; the code in each test's extra.
/// `start_ms`, `stop_ms`: the run's bounds in milliseconds since the Unix epoch.
std::string ctrf_document(const Findings& f, const Health& h, long long start_ms, long long stop_ms);

}  // namespace extmem::probe
