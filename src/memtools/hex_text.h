// The two ways the memtools commands spell a number in hexadecimal, shared by
// commands.cpp, scan_commands.cpp and diff_command.cpp (each had its own copy).
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace extmem::memtools {

/// `0x` and as few digits as the value needs: 4096 -> "0x1000".
inline std::string hex(std::uint64_t v) { return fmt::format("{:#x}", v); }

/// `0x` and exactly 2 * width digits, for a word of width bytes (1, 2, 4 or 8): (0x2a, 4) -> "0x0000002a".
inline std::string word_hex(std::uint64_t v, unsigned width) { return fmt::format("{:#0{}x}", v, 2 + 2 * width); }

}  // namespace extmem::memtools
