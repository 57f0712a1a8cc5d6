// Fuzzes the decoder of a warm worker's `done` message; a decoded message must
// re-encode to the same exit code and hygiene.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/done_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  auto done = extmem::probe::decode_done(payload);
  if (!done) return 0;
  auto again = extmem::probe::decode_done(extmem::probe::encode_done(*done));
  if (!again || !(*again == *done)) __builtin_trap();
  return 0;
}
