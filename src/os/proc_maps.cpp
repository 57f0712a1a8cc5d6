#include "extmem/os/proc_maps.h"

#include <cerrno>
#include <charconv>
#include <fstream>

#include <fmt/format.h>

namespace extmem::os {
namespace {

Error bad(std::string_view field, std::size_t column, std::string_view line) {
  return Error{"parse maps line", ErrorKind::invalid_argument, {},
               fmt::format("bad {} at column {} in \"{}\"", field, column + 1, line.substr(0, 200))};
}

// Parses hex digits at `pos` up to `stop` (or end), advancing pos.
bool hex_field(std::string_view line, std::size_t& pos, char stop, std::uint64_t& out) {
  const char* first = line.data() + pos;
  const char* last = line.data() + line.size();
  auto [p, ec] = std::from_chars(first, last, out, 16);
  if (ec != std::errc() || p == first) return false;
  pos = static_cast<std::size_t>(p - line.data());
  if (stop != '\0') {
    if (pos >= line.size() || line[pos] != stop) return false;
    ++pos;
  }
  return true;
}

}  // namespace

Result<MapEntry> parse_maps_line(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  MapEntry e;
  std::size_t pos = 0;
  if (!hex_field(line, pos, '-', e.start)) return bad("start address", pos, line);
  if (!hex_field(line, pos, ' ', e.end) || e.end < e.start) return bad("end address", pos, line);
  if (pos + 5 > line.size() || line[pos + 4] != ' ') return bad("permissions", pos, line);
  e.perms = std::string(line.substr(pos, 4));
  for (int i = 0; i < 4; ++i) {
    const char c = e.perms[static_cast<std::size_t>(i)];
    const char allowed = "rwx"[i < 3 ? i : 0];
    if (i < 3 ? (c != allowed && c != '-') : (c != 'p' && c != 's')) return bad("permissions", pos + i, line);
  }
  pos += 5;
  if (!hex_field(line, pos, ' ', e.offset)) return bad("offset", pos, line);
  std::uint64_t major = 0, minor = 0;
  if (!hex_field(line, pos, ':', major) || !hex_field(line, pos, ' ', minor)) return bad("device", pos, line);
  e.dev_major = static_cast<unsigned>(major);
  e.dev_minor = static_cast<unsigned>(minor);
  {
    const char* first = line.data() + pos;
    auto [p, ec] = std::from_chars(first, line.data() + line.size(), e.inode, 10);
    if (ec != std::errc() || p == first) return bad("inode", pos, line);
    pos = static_cast<std::size_t>(p - line.data());
  }
  while (pos < line.size() && line[pos] == ' ') ++pos;
  e.path = std::string(line.substr(pos));
  return e;
}

Result<std::vector<MapEntry>> read_maps(pid_t pid) {
  const std::string file = pid == 0 ? "/proc/self/maps" : fmt::format("/proc/{}/maps", pid);
  std::ifstream in(file);
  if (!in) return os_error("open " + file, errno);
  std::vector<MapEntry> out;
  std::string line;
  while (std::getline(in, line)) {
    auto e = parse_maps_line(line);
    if (!e) return std::move(e).error();
    out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace extmem::os
