// The T4 image rows' conversation with the image's owner, typed: the
// importer's requests (the handover semaphores, a texel-by-texel check of
// what the owner sees, a refill) and the owner's replies. Decoded strictly
// with wire::Fields (exactly the message's fields, each of its type and
// bounds, at most kMaxMessageBytes); refusals are protocol errors with step
// "image request[.FIELD]" or "image reply[.FIELD]".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "extmem/core/error.h"
#include "probe/routes/t4_image/vk_share.h"

namespace extmem::probe::image {

/// The largest message decoded, bytes (a check with its expectation is under 300).
inline constexpr std::size_t kMaxMessageBytes = 4096;

/// Export the handover semaphores; the owner's acquires after GL's signal come
/// from `gl_layout` (a VkImageLayout value). Reply Ok with the released-semaphore fd.
struct SemaphoresRequest {
  std::uint32_t gl_layout = 0;
  bool operator==(const SemaphoresRequest&) const = default;
};
/// The second handover fd (GL's signal). Reply Ok with the fd.
struct SemaphoreGlRequest {
  bool operator==(const SemaphoreGlRequest&) const = default;
};
/// Acquire the image, read it back, compare every texel with `expected`. Reply Compare.
struct CheckRequest {
  Expected expected;
  bool operator==(const CheckRequest& o) const;
};
/// Refill the image with `seed`'s pattern on the GPU and release it. Reply Ok.
struct FillRequest {
  std::uint64_t seed = 0;
  bool operator==(const FillRequest&) const = default;
};
/// The end of the conversation; no reply.
struct DoneRequest {
  bool operator==(const DoneRequest&) const = default;
};
using Request = std::variant<SemaphoresRequest, SemaphoreGlRequest, CheckRequest, FillRequest, DoneRequest>;

std::string encode(const Request& r);
/// Errors: protocol, step "image request[.FIELD]".
Result<Request> decode_request(std::string_view payload);

/// {"ok": true}
struct Ok {
  bool operator==(const Ok&) const = default;
};
/// The owner's refusal: its text, and whether it is a capability the owner's
/// driver does not offer (the importer's row is then UNSUPPORTED, not a fault).
struct Refusal {
  std::string error;
  bool not_offered = false;  ///< on the wire as "unsupported": true (absent when false)
  bool operator==(const Refusal&) const = default;
};
/// The refusal for `e`: why_of(e), and not_offered when e.kind is unsupported.
Refusal refusal_of(const Error& e);

std::string encode(const Ok&);
std::string encode(const Compare&);
std::string encode(const Refusal&);

/// A reply that should be `Reply` (Ok or Compare), or the owner's refusal as an
/// Error: kind unsupported, step "owner", detail the text, when not_offered;
/// else protocol, detail "owner: TEXT". Other errors: protocol, step "image reply[.FIELD]".
template <class Reply>
Result<Reply> decode_reply(std::string_view payload);

}  // namespace extmem::probe::image
