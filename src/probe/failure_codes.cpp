// The failure-code table and the one derivation from a verdict to its code.
#include "extmem/probe/failure_codes.h"

#include <array>

#include <fmt/format.h>

#include "extmem/probe/findings.h"

namespace extmem::probe {
namespace {

using enum FailureClass;

// Ids are blocks by class (1xx config, 2xx permission, 3xx driver, 4xx hardware,
// 5xx harness). Append only: a released id keeps its meaning forever.
constexpr std::array kCodes{
    FailureCode{"EM101", config, "not-selected", RowStatus::skip,
                "--only, --only-GROUP or --no-GROUP left the row out of this run.",
                "None if intended; otherwise drop the filter that names it."},
    FailureCode{"EM102", config, "not-built", RowStatus::skip,
                "The route is not built here: not written yet, or it belongs to another platform.",
                "None on this platform; see docs/probe.md, \"Not built yet\"."},
    FailureCode{"EM103", config, "not-applicable", RowStatus::skip,
                "The route cannot run here for a reason outside the driver, named in why.",
                "Read why; provide what it names (a device node, a second device) if the row matters."},
    FailureCode{"EM104", config, "bad-parameters", RowStatus::fail,
                "A route half was given parameters it does not accept.",
                "Check the options of the run (--size, --image-size, --memory-type) against docs/probe.md."},
    FailureCode{"EM105", config, "required-row-missing", RowStatus::fail,
                "A --require name matched no row of this run (filtered out, or a run the options did not make).",
                "Run the row: fix --only/--fd-transport/--memory-type, or correct the --require list.",
                true},
    FailureCode{"EM106", config, "required-row-skipped", RowStatus::skip,
                "A required row was SKIP, so the run cannot vouch for it.",
                "Provide what the row needs (driver, device, filters) or stop requiring it on such nodes.", true},
    FailureCode{"EM107", config, "differs-from-baseline", RowStatus::fail,
                "A row's status differs from the --expect baseline for this device and driver.",
                "Investigate the change (driver update, node state); update the baseline if it is intended.", true},
    FailureCode{"EM201", permission, "fd-transport-refused", RowStatus::unsupported,
                "The kernel refused to pass the fd by pidfd_getfd (ptrace rules, Yama ptrace_scope).",
                "Run both sides as the same uid with ptrace_scope <= 1 and PR_SET_PTRACER, or grant "
                "CAP_SYS_PTRACE, or pass fds by SCM_RIGHTS."},
    FailureCode{"EM301", driver, "driver-absent", RowStatus::skip,
                "The driver this row needs (CUDA) does not load or has no device.",
                "Install the driver and expose the device to the node if the row matters; otherwise none."},
    FailureCode{"EM302", driver, "capability-absent", RowStatus::unsupported,
                "The driver does not offer the extension, handle type or feature the route needs.",
                "Use a route that is OK on this driver, or a driver version that offers the capability."},
    FailureCode{"EM303", driver, "bytes-did-not-cross", RowStatus::fail,
                "No decisive leg round-tripped bytes: the two processes do not share this memory.",
                "Do not use this route on this driver; report the row's legs and steps to the driver vendor."},
    FailureCode{"EM304", driver, "some-legs-failed", RowStatus::partial,
                "Some decisive legs round-tripped bytes and others did not.",
                "Use only the access paths whose legs are rt; report the failing legs to the driver vendor."},
    FailureCode{"EM305", driver, "driver-call-failed", RowStatus::fail,
                "A Vulkan, GL, EGL or CUDA call failed with the driver's code, shown in why.",
                "Check the driver version and the device's state (dmesg, nvidia-smi); report step and code."},
    FailureCode{"EM306", driver, "bytes-differ", RowStatus::fail,
                "Bytes were compared and differed where the route promises the same memory.",
                "Do not use this route on this driver; report the row to the driver vendor."},
    FailureCode{"EM401", hardware, "stale-words", RowStatus::partial,
                "Every leg round-tripped, but the coherency soak read stale words.",
                "Check the memory type's coherency and the node's hardware; rerun with a longer --soak."},
    FailureCode{"EM501", harness, "route-stopped", RowStatus::fail,
                "The route stopped before its legs decided (a crash, hang or refusal named only in why).",
                "Read why and the last step; rerun the row alone (--only=ROW) and report it if it repeats."},
    FailureCode{"EM502", harness, "no-decisive-leg", RowStatus::fail,
                "The route reported no decisive leg, so nothing was compared.",
                "A probe bug: report the row with the run's JSON."},
    FailureCode{"EM503", harness, "system-call-failed", RowStatus::fail,
                "A system call of the probe failed (errno in why), e.g. a resource limit.",
                "Check the node's limits (ulimit -n, memory, memlock) and rerun."},
    FailureCode{"EM504", harness, "malformed-message", RowStatus::fail,
                "A half of the route sent a malformed, truncated or unexpected message.",
                "A probe bug or a crash mid-message: report the row with the run's JSON."},
    FailureCode{"EM505", harness, "timeout", RowStatus::fail,
                "The route did not finish within --timeout.",
                "Check the node's load and the driver's health; rerun with a larger --timeout."},
    FailureCode{"EM506", harness, "process-ended", RowStatus::fail,
                "A half of the route exited or closed its socket before it reported.",
                "Check the node's logs for the crash (dmesg, core dumps); rerun the row alone."},
};

const FailureCode& by_id(std::string_view id) noexcept {
  for (const FailureCode& c : kCodes)
    if (c.id == id) return c;
  return kCodes.back();  // unreachable for the ids used below; the table test checks each
}

const FailureCode& fail_code(const Verdict& v) noexcept {
  if (v.basis == Basis::legs) return by_id("EM303");
  if (v.basis == Basis::no_decisive_leg) return by_id("EM502");
  if (!v.kind) return by_id("EM501");
  switch (*v.kind) {
    case ErrorKind::invalid_argument: return by_id("EM104");
    case ErrorKind::os: return by_id("EM503");
    case ErrorKind::driver: return by_id("EM305");
    case ErrorKind::mismatch: return by_id("EM306");
    case ErrorKind::protocol: return by_id("EM504");
    case ErrorKind::timeout: return by_id("EM505");
    case ErrorKind::peer_closed: return by_id("EM506");
    case ErrorKind::unsupported:
    case ErrorKind::no_driver: return by_id("EM501");  // row_status() never gives these FAIL
  }
  return by_id("EM501");
}

}  // namespace

const char* to_string(FailureClass c) noexcept {
  switch (c) {
    case config: return "config";
    case permission: return "permission";
    case driver: return "driver";
    case hardware: return "hardware";
    case harness: return "harness";
  }
  return "harness";
}

std::span<const FailureCode> failure_codes() noexcept { return kCodes; }

const FailureCode* find_failure_code(std::string_view id) noexcept {
  for (const FailureCode& c : kCodes)
    if (c.id == id) return &c;
  return nullptr;
}

const FailureCode* failure_code(const Verdict& v) noexcept {
  switch (v.status) {
    case RowStatus::ok: return nullptr;
    case RowStatus::skip:
      if (v.basis == Basis::not_selected) return &by_id("EM101");
      if (v.basis == Basis::not_built) return &by_id("EM102");
      if (v.kind == ErrorKind::no_driver) return &by_id("EM301");
      return &by_id("EM103");
    case RowStatus::unsupported:
      // Only a refused pidfd fetch stops a row UNSUPPORTED with an os error.
      if (v.kind == ErrorKind::os) return &by_id("EM201");
      return &by_id("EM302");
    case RowStatus::partial: return &by_id(v.basis == Basis::soak ? "EM401" : "EM304");
    case RowStatus::fail: return &fail_code(v);
  }
  return &by_id("EM501");
}

const FailureCode* failure_code(const RowResult& row) noexcept { return failure_code(row.verdict); }

std::string failure_codes_markdown() {
  std::string md =
      "# Failure codes of `extmem probe`\n\n"
      "<!-- Generated from src/probe/failure_codes.cpp: do not edit. Regenerate with\n"
      "     build/extmem probe --list-failure-codes > docs/failure-codes.md -->\n\n"
      "Every row that is not OK carries one of these codes: in the text output (the `  code:` line\n"
      "under its RESULT line), the JSON (`rows[].code`), JUnit and CTRF. A code is derived from the\n"
      "row's status, what decided it and the kind of the error that stopped it (never from the\n"
      "error's text). Released codes never change meaning; a new meaning gets a new code.\n"
      "Classes: config (the run or the deployment's options), permission (the kernel refused for\n"
      "lack of a permission), driver, hardware, harness (the probe's own processes). Status `run`: a\n"
      "problem of the run's health (`--require`, `--expect`; docs/fleet.md), not of one row.\n\n"
      "| code | class | name | status | means | action |\n|---|---|---|---|---|---|\n";
  for (const FailureCode& c : kCodes)
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", c.id, to_string(c.klass), c.name,
                      c.run_level ? "run" : to_string(c.status), c.means, c.action);
  return md;
}

}  // namespace extmem::probe
