// A run's health for a fleet (docs/fleet.md): required rows that fail closed,
// and the difference from a baseline of expected statuses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/core/verdict.h"
#include "extmem/probe/failure_codes.h"
#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

/// One line of a --expect baseline: `ROW STATUS [device=SUBSTRING] [driver=SUBSTRING]`.
struct Expectation {
  std::string row;                ///< a row name or a printed run name (ROW@pidfd, ROW@mtN)
  RowStatus status = RowStatus::ok;
  std::string device;             ///< applies only when the device's name contains this; "" = any
  std::string driver;             ///< applies only when driver name or info contains this; "" = any
  int line = 0;                   ///< 1-based line in the file, for messages
};

/// Reads a baseline file (grammar: docs/fleet.md). Errors: invalid_argument, step
/// "--expect", detail "FILE:LINE: what was wrong; accepted: ..." (an unreadable file,
/// an unknown row or status, an unknown or empty qualifier, a line with too few words).
Result<std::vector<Expectation>> read_baseline(const std::string& path);

/// The expectation for `row` on `device`: among the lines naming the row whose
/// qualifiers all match, the one with the most qualifiers (the first of those).
const Expectation* expectation_for(const std::vector<Expectation>& baseline, std::string_view row,
                                   const vk::DeviceInfo& device);

/// The same from the device's name, driver name and driver info as a --json document
/// carries them (what `extmem report --expect` matches against).
const Expectation* expectation_for(const std::vector<Expectation>& baseline, std::string_view row,
                                   std::string_view device_name, std::string_view driver_name,
                                   std::string_view driver_info);

/// Whether `name` is accepted by --require: a row of the table, or a printed run name of one.
bool is_row_or_run_name(std::string_view name);

/// One reason the run is not healthy.
struct HealthProblem {
  std::string row;                     ///< the row (or required name) concerned
  const FailureCode* code = nullptr;   ///< why it is a problem (never null)
  std::string status;                  ///< the row's status, "absent" when no row matched
  std::string expected;                ///< the baseline's status; "" when not from a baseline
  std::string step;                    ///< the failing step: first failed leg's, else the last step reported
  std::string why;                     ///< the row's why, or what was missing
};

/// The health of a run.
struct Health {
  bool ok = true;
  std::vector<std::string> required;   ///< printed names of the rows --require/--require-group selected
  std::vector<HealthProblem> problems; ///< in print order: required rows first, then baseline differences
};

/// Health of `f` under `o`: with --require/--require-group, every required row must be OK
/// (a name matching no row: EM105; a required SKIP: EM106; otherwise the row's own code);
/// without them, every row that is FAIL or PARTIAL is a problem (the plain exit rule). With
/// `baseline`, each row whose status differs from its expectation is a problem (EM107).
Health assess(const Findings& f, const ProbeOptions& o, const std::vector<Expectation>* baseline);

/// kExitOk when healthy, else kExitFailed.
int exit_code(const Health& h);

}  // namespace extmem::probe
