// How watch prints a process name or command line it read from /proc: shared by
// series.cpp, summary.cpp and watch.cpp (each had its own copy).
#pragma once

#include <string>
#include <string_view>

namespace extmem::watch {

/// `s` with every control byte (below 0x20, and 0x7f) replaced by '?', so a
/// name cannot break a TSV/CSV line or a terminal; other bytes are kept as they are.
inline std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

}  // namespace extmem::watch
