// Fuzzes the decoder of a route child's JSON report; a decoded report must re-encode and decode the same.
#include <cstddef>
#include <cstdint>
#include <string>

#include "probe/route_report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string payload(reinterpret_cast<const char*>(data), size);
  auto report = extmem::probe::decode_report(payload);
  if (!report) return 0;
  auto again = extmem::probe::decode_report(extmem::probe::encode(*report));
  if (!again || again->legs.size() != report->legs.size() || again->detail != report->detail ||
      again->measure != report->measure || again->facts.sync_holds.size() != report->facts.sync_holds.size())
    __builtin_trap();
  return 0;
}
