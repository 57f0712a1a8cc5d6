// The `done` message: a warm worker's word that a route half ended, with its
// exit code and what the half left behind in the worker. The parent puts the
// hygiene in the row's "worker_hygiene" (docs/probe-result.schema.json) in the
// same shape it crossed the socket in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "extmem/probe/hygiene.h"

namespace extmem::probe {

/// The live-object counters a worker compares (drivers::live_objects()).
inline constexpr std::string_view kHygieneCounters[] = {"vk_buffers", "vk_memories", "gl_shared_buffers"};

struct DoneMessage {
  int exit_code = 0;  ///< the half's return value, 0..255 as a process exit code would be
  Hygiene hygiene;
  bool operator==(const DoneMessage&) const = default;
};

/// `h` as JSON: {"clean", "fds", "pid"} and, when not clean, "left_open",
/// "closed", "live_delta"; "overlapped_warm_up": true when set. The wire's and
/// the output document's form.
nlohmann::json hygiene_json(const Hygiene& h);

/// `m` as the done payload: {"exit_code": N, "hygiene": hygiene_json(...)}.
/// `m` must hold what decode_done() accepts.
std::string encode_done(const DoneMessage& m);

/// Parses and checks a done payload: exactly the fields encode_done() writes, of
/// their types; exit_code 0..255; fds and pid within the kernel's bounds; at most
/// 4096 fd entries of at most 4096 bytes each; live_delta keys from
/// kHygieneCounters; "clean" true exactly when the lists and live_delta are
/// empty (and then absent). Errors: protocol; step "done" for the payload as a
/// whole, "done.FIELD" or "done.hygiene.FIELD" for a field; detail says what was
/// found and what is accepted.
Result<DoneMessage> decode_done(std::string_view payload);

}  // namespace extmem::probe
