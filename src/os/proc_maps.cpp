#include "extmem/os/proc_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <utility>

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

Result<MapsReader> MapsReader::open(pid_t pid) {
  MapsReader r;
  const std::string dir = pid == 0 ? "/proc/self" : fmt::format("/proc/{}", pid);
  r.name_ = dir + "/maps";
  r.dir_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (r.dir_ < 0) return os_error("open " + r.name_, errno);
  r.fd_ = ::openat(r.dir_, "maps", O_RDONLY | O_CLOEXEC);
  if (r.fd_ < 0) return os_error("open " + r.name_, errno);
  return r;
}

Result<bool> MapsReader::next(std::vector<MapEntry>& out) {
  char buf[65536];
  ssize_t n;
  do {
    n = ::read(fd_, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return os_error("read " + name_, errno);
  if (n == 0) {
    if (!pending_.empty()) {
      auto e = parse_maps_line(pending_);
      if (!e) return std::move(e).error();
      out.push_back(std::move(*e));
      pending_.clear();
    }
    // The end of the file, or the end of the process: its stat says which.
    // A process whose memory is gone (exited: a zombie, or reaped) has no maps
    // left to list, so what was read may be a prefix.
    const int stat = ::openat(dir_, "stat", O_RDONLY | O_CLOEXEC);
    if (stat < 0) return os_error("read " + name_, ESRCH, "the process ended while its maps were read");
    char text[512];
    const ssize_t got = ::read(stat, text, sizeof text - 1);
    ::close(stat);
    if (got <= 0) return os_error("read " + name_, ESRCH, "the process ended while its maps were read");
    const std::string_view st(text, static_cast<std::size_t>(got));
    const std::size_t paren = st.rfind(')');
    if (paren != std::string_view::npos && paren + 2 < st.size() && (st[paren + 2] == 'Z' || st[paren + 2] == 'X'))
      return os_error("read " + name_, ESRCH, "the process ended while its maps were read");
    return false;
  }
  pending_.append(buf, static_cast<std::size_t>(n));
  std::size_t from = 0;
  for (std::size_t nl; (nl = pending_.find('\n', from)) != std::string::npos; from = nl + 1) {
    auto e = parse_maps_line(std::string_view(pending_).substr(from, nl - from));
    if (!e) return std::move(e).error();
    out.push_back(std::move(*e));
  }
  pending_.erase(0, from);
  return true;
}

MapsReader::MapsReader(MapsReader&& o) noexcept
    : dir_(std::exchange(o.dir_, -1)), fd_(std::exchange(o.fd_, -1)), name_(std::move(o.name_)),
      pending_(std::move(o.pending_)) {}

MapsReader& MapsReader::operator=(MapsReader&& o) noexcept {
  std::swap(dir_, o.dir_);
  std::swap(fd_, o.fd_);
  std::swap(name_, o.name_);
  std::swap(pending_, o.pending_);
  return *this;
}

MapsReader::~MapsReader() {
  if (fd_ >= 0) ::close(fd_);
  if (dir_ >= 0) ::close(dir_);
}

Result<std::vector<MapEntry>> read_maps(pid_t pid) {
  auto reader = MapsReader::open(pid);
  if (!reader) return std::move(reader).error();
  std::vector<MapEntry> out;
  while (true) {
    auto more = reader->next(out);
    if (!more) return std::move(more).error();
    if (!*more) return out;
  }
}

}  // namespace extmem::os
