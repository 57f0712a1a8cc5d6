#include "extmem/memtools/ram_map.h"

#include <algorithm>

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

constexpr std::string_view kRamMapGrammar =
    "GPA:FILEOFF:SIZE[,GPA:FILEOFF:SIZE...], GPA an address (hexadecimal, 0x optional, 0n for decimal, no K/M/G), "
    "FILEOFF and SIZE numbers (decimal or 0x-hex, K/M/G), SIZE > 0, ranges not overlapping in guest-physical space "
    "nor in the file";

// [a, a + an) and [b, b + bn) share a byte (sizes > 0, no wrap).
bool overlap(std::uint64_t a, std::uint64_t an, std::uint64_t b, std::uint64_t bn) {
  return a < b + bn && b < a + an;
}

}  // namespace

Result<RamMap> RamMap::parse(std::string_view text, SyntaxError* syntax) {
  auto fail = [&](std::size_t column, std::string problem) {
    return detail::syntax_failure(syntax, "ram-map", text, column, std::move(problem), kRamMapGrammar);
  };
  if (text.empty()) return fail(0, "empty ram-map");
  std::vector<RamRange> entries;
  std::size_t pos = 0;
  while (true) {
    std::uint64_t fields[3] = {};
    std::size_t columns[3] = {};
    static constexpr const char* kNames[3] = {"GPA", "FILEOFF", "SIZE"};
    for (int f = 0; f < 3; ++f) {
      std::size_t end = pos;
      while (end < text.size() && text[end] != ':' && text[end] != ',') ++end;
      if (end == pos)
        return fail(pos, fmt::format("expected {} (a number), found {}", kNames[f], detail::quote_char(text, pos)));
      columns[f] = pos;
      detail::ScanFailure failure;
      // The GPA is an address like every other; FILEOFF and SIZE are quantities (4M into the file, 4M long).
      auto n = detail::scan_number(text, pos, end, f == 0 ? NumberStyle::address : NumberStyle::quantity, failure);
      if (!n) return fail(failure.column, fmt::format("{}: {}", kNames[f], failure.problem));
      fields[f] = *n;
      pos = end;
      if (f < 2) {
        if (pos >= text.size() || text[pos] != ':')
          return fail(pos, fmt::format("expected ':' after {}, found {}", kNames[f], detail::quote_char(text, pos)));
        ++pos;
      }
    }
    const RamRange r{fields[0], fields[1], fields[2]};
    constexpr std::uint64_t kMax = ~std::uint64_t{0};
    if (r.size == 0) return fail(columns[2], "SIZE is 0");
    if (r.size > kMax - r.gpa) return fail(columns[2], "GPA + SIZE runs past 2^64 - 1");
    if (r.size > kMax - r.file_offset) return fail(columns[2], "FILEOFF + SIZE runs past 2^64 - 1");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const RamRange& o = entries[i];
      if (overlap(r.gpa, r.size, o.gpa, o.size))
        return fail(columns[0], fmt::format("guest-physical range {:#x}+{:#x} overlaps entry {} ({:#x}+{:#x})",
                                            r.gpa, r.size, i + 1, o.gpa, o.size));
      if (overlap(r.file_offset, r.size, o.file_offset, o.size))
        return fail(columns[1], fmt::format("file range {:#x}+{:#x} overlaps entry {} ({:#x}+{:#x})",
                                            r.file_offset, r.size, i + 1, o.file_offset, o.size));
    }
    entries.push_back(r);
    if (pos >= text.size()) break;
    if (text[pos] != ',')
      return fail(pos, fmt::format("expected ',' between entries, found {}", detail::quote_char(text, pos)));
    ++pos;
    if (pos >= text.size()) return fail(pos, "empty entry after the last ','");
  }
  RamMap map;
  map.ranges_ = std::move(entries);
  std::sort(map.ranges_.begin(), map.ranges_.end(),
            [](const RamRange& a, const RamRange& b) { return a.gpa < b.gpa; });
  return map;
}

std::optional<std::uint64_t> RamMap::to_file_offset(std::uint64_t gpa) const noexcept {
  for (const RamRange& r : ranges_)
    if (gpa >= r.gpa && gpa - r.gpa < r.size) return r.file_offset + (gpa - r.gpa);
  return std::nullopt;
}

std::optional<std::uint64_t> RamMap::to_gpa(std::uint64_t file_offset) const noexcept {
  for (const RamRange& r : ranges_)
    if (file_offset >= r.file_offset && file_offset - r.file_offset < r.size) return r.gpa + (file_offset - r.file_offset);
  return std::nullopt;
}

}  // namespace extmem::memtools
