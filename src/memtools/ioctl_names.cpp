#include "extmem/memtools/ioctl_names.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "extmem/os/fd.h"

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {

std::string_view builtin_ioctl_table_text();  // ioctl_builtin_table.cpp

namespace {

constexpr std::string_view kAccepted =
    "lines FAMILY PATH-PREFIX REQUEST NAME: FAMILY [a-z0-9_-], PATH-PREFIX /... or *, REQUEST TYPE:NR "
    "(TYPE a character or 0xNN, NR 0..255) or =VALUE (32-bit), NAME a C identifier; # starts a comment";
constexpr std::size_t kMaxEntries = 20000;

bool family_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; }
bool ident_char(char c, bool first) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (!first && c >= '0' && c <= '9');
}

// Parses a number field [b, e) of `text` in `style` no larger than `max`.
std::optional<std::uint64_t> number_field(std::string_view text, std::size_t b, std::size_t e, std::uint64_t max,
                                          std::string_view what, detail::ScanFailure& failure) {
  auto n = detail::scan_number(text, b, e, NumberStyle::value, failure);
  if (n && *n > max) {
    failure.column = b;
    failure.problem = fmt::format("{} {:#x} is larger than {:#x}", what, *n, max);
    return std::nullopt;
  }
  return n;
}

}  // namespace

IoctlFields split_ioctl(std::uint64_t request) {
  const auto r = static_cast<std::uint32_t>(request);
  return {r >> 30, (r >> 8) & 0xff, r & 0xff, (r >> 16) & 0x3fff};
}

std::string format_ioctl_fields(const IoctlFields& f) {
  std::string dir;
  if (f.dir == 0) dir = "_IOC_NONE";
  if (f.dir & 2) dir = "_IOC_READ";
  if (f.dir & 1) dir += dir.empty() ? "_IOC_WRITE" : "|_IOC_WRITE";
  const std::string type = f.type >= 0x21 && f.type < 0x7f && f.type != '\'' && f.type != '\\'
                               ? fmt::format("'{}'", static_cast<char>(f.type))
                               : fmt::format("{:#04x}", f.type);
  return fmt::format("_IOC({}, {}, {:#04x}, {:#x})", dir, type, f.nr, f.size);
}

namespace {

// The fields of the line [line_start, line_end) of `text`, as [begin, end)
// columns of the whole text: words between blanks, up to a '#'.
std::vector<std::pair<std::size_t, std::size_t>> line_fields(std::string_view text, std::size_t line_start,
                                                            std::size_t line_end) {
  std::vector<std::pair<std::size_t, std::size_t>> fields;
  for (std::size_t i = line_start; i < line_end;) {
    if (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
      ++i;
      continue;
    }
    if (text[i] == '#') break;
    std::size_t j = i;
    while (j < line_end && text[j] != ' ' && text[j] != '\t' && text[j] != '\r') ++j;
    fields.emplace_back(i, j);
    i = j;
  }
  return fields;
}

// The REQUEST field [rb, re) into `e`: =VALUE, or TYPE:NR with TYPE a
// character or a number. Returns nothing, or where it is wrong and why.
std::optional<detail::ScanFailure> parse_request(std::string_view text, std::size_t rb, std::size_t re, IoctlEntry& e) {
  const std::string_view req = text.substr(rb, re - rb);
  detail::ScanFailure failure;
  if (req.front() == '=') {
    auto v = number_field(text, rb + 1, re, 0xffffffffu, "the request", failure);
    if (!v) return failure;
    e.whole = true;
    e.value = static_cast<std::uint32_t>(*v);
  } else {
    std::size_t colon = 0;
    if (req.size() >= 3 && req[1] == ':' && req.substr(0, 2) != "0x") {
      const unsigned char c = static_cast<unsigned char>(req[0]);
      if (c < 0x21 || c >= 0x7f) return detail::ScanFailure{rb, "the type character is not printable"};
      e.type = c;
      colon = rb + 1;
    } else {
      colon = text.find(':', rb);
      if (colon == std::string_view::npos || colon >= re)
        return detail::ScanFailure{rb, "expected TYPE:NR (e.g. d:0x00 or 0x64:0) or =VALUE"};
      auto t = number_field(text, rb, colon, 0xff, "the type", failure);
      if (!t) return failure;
      e.type = static_cast<unsigned>(*t);
    }
    auto nr = number_field(text, colon + 1, re, 0xff, "the number", failure);
    if (!nr) return failure;
    e.nr = static_cast<unsigned>(*nr);
  }
  return std::nullopt;
}

}  // namespace

Result<IoctlTable> IoctlTable::parse(std::string_view text, SyntaxError* syntax) {
  const auto refuse = [&](std::size_t column, std::string problem) -> Error {
    return detail::syntax_failure(syntax, "ioctl table", text, column, std::move(problem), kAccepted);
  };
  IoctlTable table;
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::vector<std::pair<std::size_t, std::size_t>> fields = line_fields(text, line_start, line_end);
    const std::size_t next = line_end + 1;
    if (fields.empty()) {
      line_start = next;
      continue;
    }
    if (fields.size() != 4)
      return refuse(fields.size() > 4 ? fields[4].first : line_end,
                    fmt::format("a line has 4 fields (FAMILY PATH-PREFIX REQUEST NAME), this one {}", fields.size()));
    if (table.entries_.size() == kMaxEntries) return refuse(fields[0].first, fmt::format("more than {} entries", kMaxEntries));
    IoctlEntry e;
    const auto field = [&](int k) { return text.substr(fields[k].first, fields[k].second - fields[k].first); };
    // FAMILY
    const std::string_view family = field(0);
    if (family.size() > 32) return refuse(fields[0].first + 32, "the family name is longer than 32 characters");
    for (std::size_t k = 0; k < family.size(); ++k)
      if (!family_char(family[k]))
        return refuse(fields[0].first + k, fmt::format("unexpected {} in a family name", detail::quote_char(text, fields[0].first + k)));
    e.family = family;
    // PATH-PREFIX
    const std::string_view path = field(1);
    if (path != "*" && path.front() != '/') return refuse(fields[1].first, "a path prefix begins with '/' (or is * for any file)");
    if (path.size() > 256) return refuse(fields[1].first + 256, "the path prefix is longer than 256 bytes");
    for (std::size_t k = 0; k < path.size(); ++k)
      if (static_cast<unsigned char>(path[k]) < 0x21 || path[k] == 0x7f)
        return refuse(fields[1].first + k, "a control byte in the path prefix");
    e.path_prefix = path;
    // REQUEST
    const std::size_t rb = fields[2].first, re = fields[2].second;
    if (auto bad = parse_request(text, rb, re, e)) return refuse(bad->column, bad->problem);
    // NAME
    const std::string_view name = field(3);
    if (name.size() > 64) return refuse(fields[3].first + 64, "the name is longer than 64 characters");
    for (std::size_t k = 0; k < name.size(); ++k)
      if (!ident_char(name[k], k == 0))
        return refuse(fields[3].first + k, fmt::format("unexpected {} in a name (a C identifier)", detail::quote_char(text, fields[3].first + k)));
    e.name = name;
    table.entries_.push_back(std::move(e));
    line_start = next;
  }
  return table;
}

Result<IoctlTable> IoctlTable::load(const std::string& path, SyntaxError* syntax) {
  // O_NONBLOCK: opening a FIFO nobody writes must not hang; it is refused below.
  os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return os_error("open " + path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return os_error("fstat " + path, errno);
  if (!S_ISREG(st.st_mode))
    return Error{"read ioctl table", ErrorKind::invalid_argument, {}, path + " is not a regular file"};
  if (st.st_size > (1 << 20))
    return Error{"read ioctl table", ErrorKind::invalid_argument, {}, path + " is larger than 1 MiB"};
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("read " + path, errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return parse(text, syntax);
}

const IoctlTable& IoctlTable::builtin() {
  // Parsed once; the unit tests check that it parses, so this cannot fail at run time.
  static const IoctlTable table = [] {
    auto t = parse(builtin_ioctl_table_text());
    return t ? std::move(*t) : IoctlTable{};
  }();
  return table;
}

void IoctlTable::add(const IoctlTable& other) {
  // Entries added later are put first, so that lookup's "first best" picks them on a tie.
  std::vector<IoctlEntry> merged = other.entries_;
  merged.insert(merged.end(), entries_.begin(), entries_.end());
  entries_ = std::move(merged);
}

IoctlMatch IoctlTable::lookup(std::uint64_t request, std::string_view fd_path) const {
  const auto r = static_cast<std::uint32_t>(request);
  const IoctlFields f = split_ioctl(request);
  IoctlMatch best;
  best.path_checked = !fd_path.empty();
  long best_score = -1;
  for (const IoctlEntry& e : entries_) {
    if (e.whole ? e.value != r : (e.type != f.type || e.nr != f.nr)) continue;
    long prefix = 0;
    if (e.path_prefix != "*") {
      if (!fd_path.empty() && fd_path.substr(0, e.path_prefix.size()) != e.path_prefix) continue;
      prefix = static_cast<long>(e.path_prefix.size());
    }
    const long score = prefix * 2 + (e.whole ? 1 : 0);
    if (score > best_score) {
      best_score = score;
      best.entry = &e;
    }
  }
  return best;
}

std::string describe_ioctl(const IoctlTable& table, std::uint64_t request, std::string_view fd_path) {
  const auto r = static_cast<std::uint32_t>(request);
  const IoctlFields f = split_ioctl(request);
  const IoctlMatch m = table.lookup(request, fd_path);
  const std::string unknown_path = m.path_checked ? "" : " (by number alone: the fd's path is unknown)";
  if (m.entry != nullptr && m.entry->whole)
    return fmt::format("{:#x} {} [{}]{}", r, m.entry->name, m.entry->family, unknown_path);
  std::string out = fmt::format("{:#x} {}", r, format_ioctl_fields(f));
  if (m.entry != nullptr) {
    out += fmt::format(" {} [{}]{}", m.entry->name, m.entry->family, unknown_path);
  } else if (f.type == 'd' && f.nr >= 0x40 && f.nr < 0xa0 && fd_path.substr(0, 9) == "/dev/dri/") {
    // DRM_COMMAND_BASE..DRM_COMMAND_END belongs to the device's own driver.
    out += fmt::format(" DRM driver command {:#x} (DRM_COMMAND_BASE + {:#x}; see the driver's uapi header)", f.nr,
                       f.nr - 0x40);
  }
  return out;
}

}  // namespace extmem::memtools
