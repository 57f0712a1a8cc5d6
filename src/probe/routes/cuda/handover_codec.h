// The requests a Vulkan exporter answers for a cross-API handover
// (cuda/vk_handover.h): T1-opaque-fd-cuda's importer asks for the timeline
// semaphore's fd, then for a signal after the exporter's CPU writes and a wait
// before its CPU reads. Typed and decoded strictly with wire::Fields (exactly
// the fields, each within bounds, at most s1::kMaxMessageBytes). The exporter
// answers as an S1 producer does (s1/codec.h): s1::Ok, with the fd on the
// frame for Export, or s1::Refusal carrying the failing step, the driver's code
// and whether the capability was not advertised.
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "probe/routes/s1/codec.h"

namespace extmem::probe::handover {

/// vkGetSemaphoreFdKHR of the handover timeline (OPAQUE_FD); the fd rides on the reply's frame.
struct Export {
  using Reply = s1::Ok;
  bool operator==(const Export&) const = default;
};
/// Release the buffer to VK_QUEUE_FAMILY_EXTERNAL and signal `value`, after the exporter's CPU writes.
struct Signal {
  using Reply = s1::Ok;
  std::uint64_t value = 0;  ///< the timeline value; the importer picks increasing ones
  bool operator==(const Signal&) const = default;
};
/// Wait for `value` (bounded by the exporter), then acquire, before the exporter's CPU reads.
struct Wait {
  using Reply = s1::Ok;
  std::uint64_t value = 0;
  bool operator==(const Wait&) const = default;
};
using Request = std::variant<Export, Signal, Wait>;

/// "handover-export", "handover-signal", "handover-wait".
const char* op_of(const Request& r);
/// Whether `op` is one of the three (the serving side routes only these here).
bool is_handover_op(std::string_view op);
/// The request as a JSON object, op included.
nlohmann::json body(const Request& r);
/// Errors: protocol, step "handover request" or "handover request.FIELD"; the
/// detail says what was found and what is accepted.
Result<Request> decode_request(std::string_view payload);

}  // namespace extmem::probe::handover
