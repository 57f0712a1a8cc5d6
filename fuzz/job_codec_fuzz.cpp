// Fuzzes the decoder of the `job` message a worker or fresh child reads from the
// parent; a decoded job must re-encode to the same parameters.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/job_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  auto job = extmem::probe::decode_job(payload);
  if (!job) return 0;
  auto again = extmem::probe::decode_job(extmem::probe::encode_job(*job));
  if (!again || !(*again == *job)) __builtin_trap();
  return 0;
}
