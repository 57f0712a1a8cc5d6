// Fuzzes the ioctl name table parser (the format of --ioctl-names): a refusal
// points inside the input; every accepted entry has a name, and looking up
// each entry's own request on its own path finds an entry with that request.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/memtools/ioctl_names.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  extmem::memtools::SyntaxError bad;
  auto table = extmem::memtools::IoctlTable::parse(text, &bad);
  if (!table) {
    if (bad.column > text.size() || bad.accepted.empty()) __builtin_trap();
    return 0;
  }
  for (const extmem::memtools::IoctlEntry& e : table->entries()) {
    if (e.name.empty() || e.family.empty() || e.path_prefix.empty()) __builtin_trap();
    const std::uint32_t request = e.whole ? e.value : (e.type << 8) | e.nr;
    const std::string path = e.path_prefix == "*" ? "/x" : e.path_prefix;
    auto m = table->lookup(request, path);
    if (m.entry == nullptr) __builtin_trap();
    (void)extmem::memtools::describe_ioctl(*table, request, path);
  }
  return 0;
}
