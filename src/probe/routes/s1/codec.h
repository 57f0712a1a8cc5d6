// The S1 family's producer conversation, typed (docs/probe.md, "S1"): the
// consumer's requests (hold, release, ping, ping-gpu, drain and the wait-*
// requests of a consumer that runs in the producer's process) and the
// producer's replies. One encoding for every S1 producer: the Vulkan server
// half (s1/vk_side.cpp) and T1-cuda-ipc's gated CUDA producer alike.
//
// Each message is one JSON object in one frame's payload (os/ipc.h), decoded
// strictly with wire::Fields: exactly its fields, each of its type and within
// bounds, at most kMaxMessageBytes. Refusals are protocol errors with step
// "s1 request[.FIELD]" or "s1 reply[.FIELD]".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"

namespace extmem::probe::s1 {

/// The largest S1 payload decoded, bytes (a message is under 300).
inline constexpr std::size_t kMaxMessageBytes = 4096;
/// The longest wait a wait-ungated / wait-wait request may ask for, ms.
inline constexpr std::uint64_t kMaxWaitMs = 5000;

// ---------------------------------------------------------------- replies --

/// hold, wait-export, wait-arm: done (an fd may ride on the frame). {"ok": true}
struct Ok {
  bool operator==(const Ok&) const = default;
};
/// release: the host clock (os::monotonic_seconds, CLOCK_MONOTONIC seconds) just
/// before the signal went to the driver. {"ok": true, "t": T}
struct Released {
  double t = 0;
  bool operator==(const Released&) const = default;
};
/// ping: the producer's host clock on receipt (CLOCK_MONOTONIC seconds). {"t": T}
struct Pong {
  double t = 0;
  bool operator==(const Pong&) const = default;
};
/// A timed GPU write's end: on CLOCK_MONOTONIC through VK_EXT_calibrated_timestamps
/// ({"gpu_t": s, "max_deviation_ns": n}), or why there is none ({"gpu_error": why}),
/// or neither (the write was not timed).
struct GpuEnd {
  std::optional<double> gpu_t;            ///< seconds, CLOCK_MONOTONIC
  std::uint64_t max_deviation_ns = 0;     ///< the calibration's deviation; with gpu_t only
  std::optional<std::string> gpu_error;   ///< set only without gpu_t
  bool operator==(const GpuEnd&) const = default;
};
/// ping-gpu: the untimed-semaphore write's end (`gpu`) and the host clock when its
/// fence was seen (`t`, absent when the device has no timestamps).
struct PingGpuReply {
  std::optional<double> t;
  GpuEnd gpu;
  bool operator==(const PingGpuReply&) const = default;
};
/// drain: whether the producer's work finished; a timed round's write end.
struct Drained {
  bool drained = false;
  GpuEnd gpu;
  bool operator==(const Drained&) const = default;
};
/// wait-ungated / wait-wait: whether the waiter's fence signalled within the
/// bound, and the wait's result code (VkResult name).
struct WaitReply {
  bool signalled = false;
  std::string code;
  bool operator==(const WaitReply&) const = default;
};
/// wait-observe: what the waiter's queue shows (sync::Observation).
struct ObserveReply {
  bool fence = false;
  bool marker = false;
  std::optional<std::uint64_t> counter;  ///< the timeline's value, when a timeline
  bool operator==(const ObserveReply&) const = default;
};
/// wait-check: the waiter's copy against the producer's data (sync::CopyCheck).
struct CheckReply {
  std::uint64_t mismatched = 0;         ///< 32-bit words
  std::uint64_t words = 0;              ///< 32-bit words compared
  std::optional<std::uint64_t> first;   ///< bytes into the region of the first mismatch
  bool operator==(const CheckReply&) const = default;
};

/// A refused request: the producer's failing step, the driver's code, its text,
/// and whether the producer found the capability not advertised (the consumer's
/// row is then UNSUPPORTED, "server: ..." in its detail).
/// {"error": TEXT, "step": S, "code": C, "unsupported": B}
struct Refusal {
  std::string error;
  std::string step;
  std::string code;
  bool not_advertised = false;  ///< on the wire as "unsupported"
  bool operator==(const Refusal&) const = default;
};
/// The refusal for `e`: its detail (or message when it has none), step, code,
/// and unsupported when e.kind is.
Refusal refusal_of(const Error& e);

// --------------------------------------------------------------- requests --

/// Fill region E with the stale pattern and hold back the signal; reply with
/// the semaphore's fd. `kind`: a SemaphoreKind key (s1/vk_side.h);
/// `write` false: the signal alone, a gate for a peer that writes E itself;
/// `time`: time the write's end (the drain reply carries it).
struct Hold {
  using Reply = Ok;
  std::string kind;
  bool write = true;
  bool time = false;
  bool operator==(const Hold&) const = default;
};
struct Release {
  using Reply = Released;
  bool operator==(const Release&) const = default;
};
struct Ping {
  using Reply = Pong;
  bool operator==(const Ping&) const = default;
};
struct PingGpu {
  using Reply = PingGpuReply;
  bool operator==(const PingGpu&) const = default;
};
struct Drain {
  using Reply = Drained;
  bool operator==(const Drain&) const = default;
};
/// Export a semaphore of `kind` (an OPAQUE_FD kind) for the peer to signal.
struct WaitExport {
  using Reply = Ok;
  std::string kind;
  bool operator==(const WaitExport&) const = default;
};
struct WaitArm {
  using Reply = Ok;
  bool operator==(const WaitArm&) const = default;
};
/// The waiter's copy without the wait, waited for at most `ms` (<= kMaxWaitMs).
struct WaitUngated {
  using Reply = WaitReply;
  std::uint64_t ms = 0;
  bool operator==(const WaitUngated&) const = default;
};
struct WaitObserve {
  using Reply = ObserveReply;
  bool operator==(const WaitObserve&) const = default;
};
/// The waiter's fence, waited for at most `ms` (<= kMaxWaitMs).
struct WaitWait {
  using Reply = WaitReply;
  std::uint64_t ms = 0;
  bool operator==(const WaitWait&) const = default;
};
struct WaitCheck {
  using Reply = CheckReply;
  bool operator==(const WaitCheck&) const = default;
};
/// The end of the conversation; no reply.
struct Done {
  bool operator==(const Done&) const = default;
};
using Request = std::variant<Hold, Release, Ping, PingGpu, Drain, WaitExport, WaitArm, WaitUngated, WaitObserve,
                             WaitWait, WaitCheck, Done>;

/// The op a request is sent as ("hold", "wait-ungated", ...).
const char* op_of(const Request& r);

/// The message as a JSON object (a producer behind peer::serve() returns it as
/// its route reply), and as the payload text.
nlohmann::json body(const Request& r);
std::string encode(const Request& r);
/// Errors: protocol, step "s1 request" or "s1 request.FIELD"; an op this
/// family does not know is refused naming the ops accepted.
Result<Request> decode_request(std::string_view payload);

nlohmann::json body(const Ok&);
nlohmann::json body(const Released&);
nlohmann::json body(const Pong&);
nlohmann::json body(const PingGpuReply&);
nlohmann::json body(const Drained&);
nlohmann::json body(const WaitReply&);
nlohmann::json body(const ObserveReply&);
nlohmann::json body(const CheckReply&);
nlohmann::json body(const Refusal&);
template <class Reply>
std::string encode(const Reply& r) {
  return body(r).dump();
}
/// A reply that should be `Reply`, or the producer's Refusal as an Error:
/// kind unsupported when it says so, else driver; its step and code; detail
/// "server: TEXT". Other errors: protocol, step "s1 reply[.FIELD]".
template <class Reply>
Result<Reply> decode_reply(std::string_view payload);

}  // namespace extmem::probe::s1
