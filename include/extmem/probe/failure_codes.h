// Stable failure codes: every row that is not OK carries one (docs/failure-codes.md,
// generated from this table by `extmem probe --list-failure-codes`).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "extmem/core/verdict.h"

namespace extmem::probe {

struct RowResult;

/// Who can act on a failure. Fleet tooling routes on this, not on the row.
enum class FailureClass : std::uint8_t {
  config,      ///< the run or the deployment's options decided it (filters, build, arguments)
  permission,  ///< the kernel refused for lack of a permission the deployment controls
  driver,      ///< the driver lacks a capability, or did not share the bytes it claimed to
  hardware,    ///< the memory itself misbehaved (stale words under a soak)
  harness,     ///< the probe's own processes: a crash, hang, broken message or failed system call
};

/// "config", "permission", "driver", "hardware", "harness".
const char* to_string(FailureClass c) noexcept;

/// One entry of the table. Released ids never change meaning; a new meaning gets a new id.
struct FailureCode {
  std::string_view id;      ///< "EM-D04": "EM-", the class's letter, two digits
  FailureClass klass;
  std::string_view name;    ///< short kebab-case name, e.g. "bytes-did-not-cross"
  RowStatus status;         ///< the status rows with this code have
  std::string_view means;   ///< one sentence: what happened
  std::string_view action;  ///< one sentence: what to do about it
  bool run_level = false;   ///< a problem of the run's health (docs/fleet.md), not a row's status
};

/// Every code, in id order. Static storage: the views stay valid for the program's life.
std::span<const FailureCode> failure_codes() noexcept;

/// The code with this id, or nullptr.
const FailureCode* find_failure_code(std::string_view id) noexcept;

/// The code of a verdict: nullptr for OK, otherwise derived from its status,
/// basis and error kind (never from its text). A kind the table has no entry
/// for under that status gets the status's generic code.
const FailureCode* failure_code(const Verdict& verdict) noexcept;

/// The same for a row.
const FailureCode* failure_code(const RowResult& row) noexcept;

/// docs/failure-codes.md: the table as Markdown, with its regeneration command.
std::string failure_codes_markdown();

}  // namespace extmem::probe
