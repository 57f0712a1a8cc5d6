// Fuzzes the page-table format loader (--format=FILE.json): accepted formats
// have a root and levels whose `next` lies strictly below, so a walk of any VA
// through an image of arbitrary bytes ends within as many steps as there are
// levels times parts; refused ones carry a JSON path or a column inside the input.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/memtools/walk.h"

namespace {
// A 64 KiB image of repeating bytes that look like valid entries of many formats.
const std::string& image_path() {
  static const std::string path = [] {
    const int fd = ::memfd_create("walk-format-fuzz", 0);
    std::string bytes(64 << 10, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) ^ 0x87);
    if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) __builtin_trap();
    return "/proc/self/fd/" + std::to_string(fd);
  }();
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace extmem::memtools;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  SyntaxError syntax;
  auto f = WalkFormat::from_json(text, &syntax);
  if (!f) {
    if (!syntax.subject.empty() && (syntax.column > text.size() || syntax.input != text)) __builtin_trap();
    if (syntax.subject.empty() && f.error().detail.empty()) __builtin_trap();
    return 0;
  }
  if (f->levels.empty() || f->root >= f->levels.size()) __builtin_trap();
  static auto image = PhysicalImage::open(image_path(), std::nullopt);
  if (!image) __builtin_trap();
  std::size_t parts = 0;
  for (const WalkLevel& l : f->levels) parts += l.parts.size();
  for (std::uint64_t va : {std::uint64_t{0x1234}, std::uint64_t{0x7f0000401234}, ~std::uint64_t{0}}) {
    auto r = walk(*f, *image, 0x1000, va, true);
    if (!r) continue;  // VA outside the format's range
    for (const WalkChain& c : r->chains)
      if (c.steps.empty() || c.steps.size() > parts) __builtin_trap();
  }
  return 0;
}
