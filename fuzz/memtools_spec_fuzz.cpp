// Fuzzes the SPEC parser (`--match`): accepted SPECs have terms and can be
// matched; refused ones point inside the input and render without trouble.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extmem/memtools/map_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  extmem::memtools::SyntaxError syntax;
  auto spec = extmem::memtools::MapSpec::parse(text, &syntax);
  if (spec) {
    if (spec->terms().empty()) __builtin_trap();
    extmem::os::MapEntry m;
    m.start = 0x7f0000000000;
    m.end = m.start + 0x4000;
    m.perms = "rw-s";
    m.path = "/memfd:extmem-waiter (deleted)";
    (void)spec->matches(m);
  } else {
    if (syntax.column > text.size() || syntax.input != text || syntax.accepted.empty()) __builtin_trap();
    if (syntax.render("--match").find('^') == std::string::npos) __builtin_trap();
  }
  return 0;
}
