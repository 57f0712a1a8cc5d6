// Fuzzes the S1 producer conversation's decoders (s1/codec.h) and the handover
// requests answered the same way (cuda/handover_codec.h), which read what the other
// half sent: nothing may crash, and a decoded message must re-encode to one
// that decodes to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/routes/cuda/handover_codec.h"
#include "probe/routes/s1/codec.h"

namespace s1 = extmem::probe::s1;
namespace handover = extmem::probe::handover;

namespace {

template <class Reply>
void reply_round_trip(std::string_view payload) {
  auto r = s1::decode_reply<Reply>(payload);
  if (!r) return;
  auto again = s1::decode_reply<Reply>(s1::encode(*r));
  if (!again || !(*again == *r)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  if (auto req = s1::decode_request(payload)) {
    auto again = s1::decode_request(s1::encode(*req));
    if (!again || !(*again == *req)) __builtin_trap();
  }
  if (auto req = handover::decode_request(payload)) {
    auto again = handover::decode_request(handover::body(*req).dump());
    if (!again || !(*again == *req)) __builtin_trap();
  }
  reply_round_trip<s1::Ok>(payload);
  reply_round_trip<s1::Released>(payload);
  reply_round_trip<s1::Pong>(payload);
  reply_round_trip<s1::PingGpuReply>(payload);
  reply_round_trip<s1::Drained>(payload);
  reply_round_trip<s1::WaitReply>(payload);
  reply_round_trip<s1::ObserveReply>(payload);
  reply_round_trip<s1::CheckReply>(payload);
  return 0;
}
