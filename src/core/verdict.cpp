#include "extmem/core/verdict.h"

namespace extmem {

const char* to_string(RowStatus status) noexcept {
  switch (status) {
    case RowStatus::ok: return "OK";
    case RowStatus::partial: return "PARTIAL";
    case RowStatus::fail: return "FAIL";
    case RowStatus::unsupported: return "UNSUPPORTED";
    case RowStatus::skip: return "SKIP";
  }
  return "FAIL";
}

bool is_failure(RowStatus status) noexcept { return status == RowStatus::fail || status == RowStatus::partial; }

bool did_not_run(RowStatus status) noexcept { return status == RowStatus::skip || status == RowStatus::unsupported; }

RowStatus row_status(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::no_driver: return RowStatus::skip;
    case ErrorKind::unsupported: return RowStatus::unsupported;
    default: return RowStatus::fail;
  }
}

const char* to_string(Basis basis) noexcept {
  switch (basis) {
    case Basis::legs: return "legs";
    case Basis::soak: return "soak";
    case Basis::no_decisive_leg: return "no_decisive_leg";
    case Basis::stopped: return "stopped";
    case Basis::not_built: return "not_built";
    case Basis::not_selected: return "not_selected";
  }
  return "stopped";
}

void stop_row(RouteFacts& facts, ErrorKind kind, std::string why) {
  facts.stop_kind = kind;
  switch (row_status(kind)) {
    case RowStatus::skip: facts.skip = std::move(why); break;
    case RowStatus::unsupported: facts.unsupported = std::move(why); break;
    default: facts.fatal = std::move(why); break;
  }
}

std::string Leg::trace_value() const {
  if (!attempted) return "notrun";
  if (read_ok && write_ok) return "rt";
  if (read_ok) return "read-only";
  if (write_ok) return "write-only";
  return "no";
}

namespace {
std::string leg_why(const Leg& leg) {
  std::string why = leg.name + ": ";
  if (!leg.failed_step.empty()) {
    why += leg.failed_step;
    if (!leg.code.empty()) why += " -> " + leg.code;
  } else if (!leg.attempted) {
    why += "not run";
  } else {
    why += leg.read_ok ? "its writes did not reach the allocating side"
                       : leg.write_ok ? "the allocating side's bytes were not visible"
                                      : "no bytes crossed in either direction";
  }
  if (!leg.note.empty()) why += " [" + leg.note + "]";
  return why;
}
}  // namespace

Verdict decide(const RouteFacts& facts, const std::vector<Leg>& legs) {
  if (facts.skip) return {RowStatus::skip, *facts.skip, facts.stop_basis, facts.stop_kind};
  if (facts.fatal) return {RowStatus::fail, *facts.fatal, facts.stop_basis, facts.stop_kind};
  if (facts.unsupported) return {RowStatus::unsupported, *facts.unsupported, facts.stop_basis, facts.stop_kind};

  std::size_t decisive = 0, round_tripped = 0;
  std::string why;
  for (const Leg& leg : legs) {
    if (!leg.decisive) continue;
    ++decisive;
    if (leg.attempted && leg.read_ok && leg.write_ok) {
      ++round_tripped;
    } else {
      why += (why.empty() ? "" : "; ") + leg_why(leg);
    }
  }
  if (decisive == 0) return {RowStatus::fail, "no decisive leg: nothing was compared", Basis::no_decisive_leg, {}};
  if (round_tripped == decisive) {
    if (facts.soak && facts.soak->stale > 0)
      return {RowStatus::partial, "stale=" + std::to_string(facts.soak->stale) + "/" + std::to_string(facts.soak->words) +
                                      " words in " + std::to_string(facts.soak->rounds) + " rounds",
              Basis::soak, {}};
    return {RowStatus::ok, {}};
  }
  if (round_tripped > 0) return {RowStatus::partial, why};
  return {RowStatus::fail, why};
}

std::string trace(const std::vector<Leg>& legs) {
  std::string out;
  for (const Leg& leg : legs) {
    if (!out.empty()) out += ' ';
    out += leg.name + (leg.decisive ? "[D]=" : "[i]=") + leg.trace_value();
  }
  return out;
}

}  // namespace extmem
