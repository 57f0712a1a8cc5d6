// Fuzzes the decoders of the messages between a route's halves (setup,
// requests, replies), which read what another process sent: nothing may crash,
// and a decoded message must re-encode to one that decodes to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/worker/peer_codec.h"

namespace peer = extmem::probe::peer;

namespace {

template <class Reply>
void reply_round_trip(std::string_view payload) {
  auto r = peer::decode_reply<Reply>(payload);
  if (!r) return;
  auto again = peer::decode_reply<Reply>(peer::encode(*r));
  if (!again || !(*again == *r)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  if (auto req = peer::decode_request(payload)) {
    auto again = peer::decode_request(peer::encode(*req));
    if (!again || !(*again == *req)) __builtin_trap();
  }
  if (auto setup = peer::decode_setup(payload)) {
    auto again = peer::decode_setup(peer::encode(*setup));
    if (!again || again->index() != setup->index()) __builtin_trap();
    // A decoded info is exactly what its encoding gives back.
    if (const auto* ok = std::get_if<peer::SetupOk>(&*setup))
      if (!(std::get<peer::SetupOk>(*again) == *ok)) __builtin_trap();
  }
  reply_round_trip<peer::CheckReply>(payload);
  reply_round_trip<peer::CountReply>(payload);
  reply_round_trip<peer::MissingReply>(payload);
  reply_round_trip<peer::Ack>(payload);
  (void)peer::decode_route_reply(payload);
  return 0;
}
