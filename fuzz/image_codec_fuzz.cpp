// Fuzzes the T4 image rows' decoders (t4_image/codec.h), which read what the
// other half sent: nothing may crash, and a decoded message must re-encode to
// one that decodes to the same message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/routes/t4_image/codec.h"

namespace image = extmem::probe::image;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  if (auto req = image::decode_request(payload)) {
    auto again = image::decode_request(image::encode(*req));
    if (!again || !(*again == *req)) __builtin_trap();
  }
  if (auto c = image::decode_reply<image::Compare>(payload)) {
    auto again = image::decode_reply<image::Compare>(image::encode(*c));
    if (!again || image::encode(*again) != image::encode(*c)) __builtin_trap();
  }
  if (auto ok = image::decode_reply<image::Ok>(payload)) {
    if (!image::decode_reply<image::Ok>(image::encode(*ok))) __builtin_trap();
  }
  return 0;
}
