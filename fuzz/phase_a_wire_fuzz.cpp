// Fuzzes the decoder of phase A as a warm worker sends it to the parent (its one
// JSON form, phase_a_codec.h, or the run's error); what decodes must re-encode to
// the same text and decode again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "probe/phase_a_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto found = extmem::probe::decode_phase_a(text);
  if (!found) return 0;
  const std::string once = extmem::probe::encode_phase_a(*found);
  auto again = extmem::probe::decode_phase_a(once);
  if (!again || extmem::probe::encode_phase_a(*again) != once) __builtin_trap();
  return 0;
}
