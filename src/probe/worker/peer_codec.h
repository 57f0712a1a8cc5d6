// The messages between a route's two halves on the peer socket (fd 3), typed:
// the setup the allocating side sends first, the driving side's requests and
// the serving side's replies (probe/worker/peer.h runs the conversation).
//
// Every message is one JSON object in the payload of one frame (os/ipc.h).
// The requests every route shares (check, write, count, read, stamp, unstamp,
// missing, fill, done) and their replies are decoded strictly: exactly their fields,
// each of its type and within its bounds. A request with any other op is a
// route's own (RouteOp): only its op is checked here, its fields are the
// route's to read. The setup's `info` is typed and checked (setup_info.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "probe/layout.h"
#include "probe/route_report.h"
#include "probe/worker/setup_info.h"

namespace extmem::probe::peer {

/// The largest payload the decoders read, bytes (a shared request is under 100;
/// a route's own, with its fields, under 1 KiB).
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;

// ------------------------------------------------------------------ setup --

/// The allocating side's first message: ok with the route's fields (the shared
/// fd rides on the frame), or the facts that end the route.
struct SetupOk {
  SetupInfo info;
  bool operator==(const SetupOk&) const = default;
};
struct SetupFailed {
  RouteFacts facts;  ///< unsupported, fatal, skip and stop_kind; other fields unused
};
using Setup = std::variant<SetupOk, SetupFailed>;

std::string encode(const Setup& s);
/// Errors: protocol (step "peer setup[.FIELD]", "peer setup.info[.FIELD...]"). A failure naming no reason
/// decodes as fatal "peer setup failed without a reason" (kind protocol).
Result<Setup> decode_setup(std::string_view payload);

// --------------------------------------------------------------- requests --

/// Compare `region` with its pattern (`seed`: another writer's seed).
struct Check {
  Region region{};
  std::optional<std::uint64_t> seed;
  bool operator==(const Check&) const = default;
};
/// Write `region` with the pattern of `seed` (default: the region's own).
struct Write {
  Region region{};
  std::optional<std::uint64_t> seed;
  bool operator==(const Write&) const = default;
};
/// Count the 32-bit words of `region` that differ from `seed`'s pattern (soak).
struct Count {
  Region region{};
  std::uint64_t seed = 0;
  bool operator==(const Count&) const = default;
};
/// Send `length` bytes at `offset` of the serving side's view (a data frame back).
struct Read {
  std::uint64_t offset = 0;  ///< bytes from the view's start
  std::uint64_t length = 0;  ///< bytes; over os::kMaxPayload, or past the view, gets an empty data frame
  bool operator==(const Read&) const = default;
};
/// Whole-allocation sweep (whole_alloc.h): write the stamps of `seed` over an
/// allocation of `size` bytes, keeping the words overwritten on the first one.
struct Stamp {
  std::uint64_t size = 0;
  std::uint64_t seed = 0;
  bool operator==(const Stamp&) const = default;
};
/// Put back the words the first Stamp overwrote.
struct Unstamp {
  bool operator==(const Unstamp&) const = default;
};
/// The offset of the first stamp of `seed` the serving side's view lacks.
struct Missing {
  std::uint64_t size = 0;
  std::uint64_t seed = 0;
  bool operator==(const Missing&) const = default;
};
/// Write `length` bytes of `seed`'s pattern at `offset` of the serving side's
/// view (T1-cuda-vmm-multichunk's boundary windows); a range outside the view is refused.
struct Fill {
  std::uint64_t offset = 0;  ///< bytes from the view's start
  std::uint64_t length = 0;  ///< bytes
  std::uint64_t seed = 0;
  bool operator==(const Fill&) const = default;
};
/// The end of the conversation; no reply.
struct Done {
  bool operator==(const Done&) const = default;
};
/// A route's own request: `op` is none of the above; `body` is the whole
/// object, op included, for the route to read.
struct RouteOp {
  std::string op;
  nlohmann::json body;
  bool operator==(const RouteOp&) const = default;
};
using Request = std::variant<Check, Write, Count, Read, Stamp, Unstamp, Missing, Fill, Done, RouteOp>;

std::string encode(const Request& r);
/// Errors: protocol; step "peer request" for the payload, "peer request.FIELD"
/// for a field; the detail says what was found and what is accepted.
Result<Request> decode_request(std::string_view payload);
/// The request's op as it is sent ("check", ..., or the route's own).
std::string op_of(const Request& r);

// ---------------------------------------------------------------- replies --

/// To Write, Stamp, Unstamp and Fill.
struct Ack {
  bool operator==(const Ack&) const = default;
};
/// To Check.
struct CheckReply {
  bool match = false;
  std::optional<std::uint64_t> mismatch_at;  ///< bytes into the region
  std::optional<std::uint64_t> payload_at;   ///< bytes into the view, where the pattern was found
  bool operator==(const CheckReply&) const = default;
};
/// To Count.
struct CountReply {
  std::uint64_t stale = 0;  ///< 32-bit words
  bool operator==(const CountReply&) const = default;
};
/// To Missing; nullopt when the view holds every stamp.
struct MissingReply {
  std::optional<std::uint64_t> missing_at;  ///< bytes from the allocation's start
  bool operator==(const MissingReply&) const = default;
};
/// A refused request: the serving side's reason.
struct ErrorReply {
  std::string error;
  bool operator==(const ErrorReply&) const = default;
};

std::string encode(const Ack&);
std::string encode(const CheckReply&);
std::string encode(const CountReply&);
std::string encode(const MissingReply&);
std::string encode(const ErrorReply&);

/// Decodes a reply that should be `T`. Errors: protocol; a refusal (an
/// ErrorReply) is one too, with the peer's reason as "peer: REASON".
template <class T>
Result<T> decode_reply(std::string_view payload);

/// A route's own reply: any object. Errors: protocol when it is not an object,
/// or is a refusal ({"error": REASON}: "peer: REASON").
Result<nlohmann::json> decode_route_reply(std::string_view payload);

}  // namespace extmem::probe::peer
