// Fuzzes the args-file splitter (src/cli/args_file.h), whose input is a
// file a launcher without a shell hands the probe. Accepted text must give
// words with line numbers that never decrease and never pass the last line;
// refused text must say where ("PATH:LINE: ...") with a line inside the text.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/args_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const unsigned lines = 1 + static_cast<unsigned>(std::count(text.begin(), text.end(), '\n'));
  auto words = extmem::cli::split_args_text(text, "F");
  if (words) {
    unsigned last = 1;
    for (const extmem::cli::ArgsWord& w : *words) {
      if (w.line < last || w.line > lines) __builtin_trap();
      if (w.text.find('\n') != std::string::npos) __builtin_trap();  // a word never spans lines
      last = w.line;
    }
  } else {
    const std::string& d = words.error().detail;
    if (d.rfind("F:", 0) != 0) __builtin_trap();
    const unsigned line = static_cast<unsigned>(std::stoul(d.substr(2)));
    if (line < 1 || line > lines) __builtin_trap();
  }
  return 0;
}
