#include "extmem/memtools/word_access.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "extmem/memtools/processes.h"
#include "extmem/memtools/syntax.h"
#include "memtools/image_file.h"

namespace extmem::memtools {
namespace {

// Offsets were decimal before every address became hexadecimal: an offset
// past the end whose hex digits read as a decimal number may be one of those.
std::string decimal_hint(std::uint64_t address) {
  const std::string digits = fmt::format("{:x}", address);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return {};
  return fmt::format("; offsets are hexadecimal, as every address: if {} was meant in decimal, write 0n{}", digits,
                     digits);
}


// The low `width` bytes of `value` in this machine's byte order, and back.
void to_bytes(std::uint64_t value, unsigned width, unsigned char* out) {
  switch (width) {
    case 1: { const auto v = static_cast<std::uint8_t>(value); std::memcpy(out, &v, 1); break; }
    case 2: { const auto v = static_cast<std::uint16_t>(value); std::memcpy(out, &v, 2); break; }
    case 4: { const auto v = static_cast<std::uint32_t>(value); std::memcpy(out, &v, 4); break; }
    default: std::memcpy(out, &value, 8); break;
  }
}
std::uint64_t from_bytes(const unsigned char* in, unsigned width) {
  switch (width) {
    case 1: { std::uint8_t v; std::memcpy(&v, in, 1); return v; }
    case 2: { std::uint16_t v; std::memcpy(&v, in, 2); return v; }
    case 4: { std::uint32_t v; std::memcpy(&v, in, 4); return v; }
    default: { std::uint64_t v; std::memcpy(&v, in, 8); return v; }
  }
}

Error bad_width(unsigned width) {
  return Error{"word access", ErrorKind::invalid_argument, {}, fmt::format("width {} is not 1, 2, 4 or 8 bytes", width)};
}

// Everything but printable ASCII escaped, so one audit record stays one line.
std::string escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out += fmt::format("\\{}", c);
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out;
}

}  // namespace

const char* to_string(WordCode code) noexcept {
  switch (code) {
    case WordCode::not_mapped: return kCodeNotMapped;
    case WordCode::crosses_mapping: return kCodeCrossesMapping;
    case WordCode::spec_mismatch: return kCodeSpecMismatch;
    case WordCode::not_writable: return kCodeNotWritable;
    case WordCode::expect_mismatch: return kCodeExpectMismatch;
    case WordCode::past_end: return kCodePastEnd;
  }
  return "?";
}

Error word_error(std::string step, ErrorKind kind, WordCode code, std::string detail) {
  return coded_error(std::move(step), kind, CodeSpace::extmem, static_cast<std::int64_t>(code), to_string(code),
                     std::move(detail));
}

std::optional<WordCode> word_code(const Error& error) noexcept {
  if (error.space != CodeSpace::extmem) return std::nullopt;
  return static_cast<WordCode>(error.native);
}

Result<WordTarget> WordTarget::open_process(pid_t pid, bool writable) {
  WordTarget t;
  t.name_ = fmt::format("/proc/{}/mem", pid);
  const int fd = ::open(t.name_.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return os_error("open " + t.name_, errno);
  t.fd_.reset(fd);
  t.pid_ = pid;
  return t;
}

Result<WordTarget> WordTarget::open_file(const std::string& path, bool writable) {
  WordTarget t;
  t.name_ = path;
  auto image = detail::open_image(path, writable);
  if (!image) return std::move(image).error();
  t.fd_ = std::move(image->fd);
  t.size_ = image->size;
  return t;
}

Result<std::uint64_t> WordTarget::read(std::uint64_t address, unsigned width) const {
  if (!valid_width(width)) return bad_width(width);
  const std::string step = fmt::format("pread {} at {:#x}", name_, address);
  if (pid_ == 0 && (address > size_ || size_ - address < width))
    return word_error(step, ErrorKind::invalid_argument, WordCode::past_end,
                      fmt::format("the {}-byte word runs past the end of the file ({} bytes){}", width, size_,
                                  decimal_hint(address)));
  unsigned char buf[8];
  ssize_t n;
  do {
    n = ::pread(fd_.get(), buf, width, static_cast<off_t>(address));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return os_error(step, errno);
  if (static_cast<std::size_t>(n) != width) {
    if (pid_ == 0)
      return word_error(step, ErrorKind::invalid_argument, WordCode::past_end, "the file ended before the word (it shrank?)");
    // /proc/PID/mem reads 0 bytes once the process's memory is gone (it exited, or is a zombie).
    if (!process_running(pid_)) return os_error(step, ESRCH, "the process ended");
    return os_error(step, EIO, fmt::format("short read: {} of {} bytes", n, width));
  }
  return from_bytes(buf, width);
}

Status WordTarget::write(std::uint64_t address, unsigned width, std::uint64_t value) const {
  if (!valid_width(width)) return bad_width(width);
  const std::string step = fmt::format("pwrite {} at {:#x}", name_, address);
  if (pid_ == 0 && (address > size_ || size_ - address < width))
    return word_error(step, ErrorKind::invalid_argument, WordCode::past_end,
                      fmt::format("the {}-byte word runs past the end of the file ({} bytes){}", width, size_,
                                  decimal_hint(address)));
  unsigned char buf[8];
  to_bytes(value, width, buf);
  ssize_t n;
  do {
    n = ::pwrite(fd_.get(), buf, width, static_cast<off_t>(address));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return os_error(step, errno);
  if (static_cast<std::size_t>(n) != width) {
    if (pid_ != 0 && !process_running(pid_)) return os_error(step, ESRCH, "the process ended");
    return os_error(step, EIO, fmt::format("short write: {} of {} bytes", n, width));
  }
  return {};
}

Result<os::MapEntry> find_target_mapping(const std::vector<os::MapEntry>& maps, std::uint64_t address,
                                         unsigned width, const MapSpec* spec, bool for_write,
                                         const std::string& step) {
  if (!valid_width(width)) return bad_width(width);
  for (const os::MapEntry& m : maps) {
    if (!m.contains(address)) continue;
    if (m.end - address < width)
      return word_error(step, ErrorKind::invalid_argument, WordCode::crosses_mapping,
                        fmt::format("the {}-byte word at {:#x} runs past the end of mapping {}", width, address,
                                    format_mapping(m)));
    if (spec != nullptr && !spec->matches(m))
      return word_error(step, ErrorKind::invalid_argument, WordCode::spec_mismatch,
                        fmt::format("mapping {} does not match SPEC \"{}\"", format_mapping(m), spec->text()));
    if (for_write && (m.perms.size() < 2 || m.perms[1] != 'w'))
      return word_error(step, ErrorKind::invalid_argument, WordCode::not_writable,
                        fmt::format("mapping {} is not writable", format_mapping(m)));
    return m;
  }
  return word_error(step, ErrorKind::invalid_argument, WordCode::not_mapped,
                    fmt::format("{:#x} is outside every mapping", address));
}

Result<WriteRecord> write_checked(const WordTarget& target, const os::MapEntry* mapping, std::uint64_t address,
                                  unsigned width, std::uint64_t value, std::optional<std::uint64_t> expect) {
  WriteRecord r;
  r.pid = target.pid();
  if (r.pid == 0) r.file = target.name();
  r.address = address;
  r.width = width;
  r.written = value;
  if (mapping != nullptr) r.mapping = *mapping;
  auto old = target.read(address, width);
  if (!old) return std::move(old).error();
  r.old_value = *old;
  if (expect && *expect != r.old_value)
    return word_error(fmt::format("compare {} at {:#x}", target.name(), address), ErrorKind::mismatch,
                      WordCode::expect_mismatch,
                      fmt::format("old value {:#x}, expected {:#x}; nothing written", r.old_value, *expect));
  if (auto st = target.write(address, width, value); !st) return std::move(st).error();
  auto back = target.read(address, width);
  if (back) {
    r.read_back = *back;
  } else if (!back.error().is_errno(ESRCH)) {
    return std::move(back).error();
  }
  return r;
}

Result<PeekResult> peek_process(pid_t pid, std::uint64_t address, unsigned width, const MapSpec* spec) {
  auto maps = read_live_maps(pid);
  if (!maps) return std::move(maps).error();
  auto mapping = find_target_mapping(*maps, address, width, spec, false,
                                     fmt::format("peek pid {} {:#x}", pid, address));
  if (!mapping) return std::move(mapping).error();
  auto target = WordTarget::open_process(pid, false);
  if (!target) return std::move(target).error();
  auto value = target->read(address, width);
  if (!value) return std::move(value).error();
  return PeekResult{*value, std::move(*mapping)};
}

Result<PeekResult> peek_file(const std::string& path, std::uint64_t offset, unsigned width) {
  auto target = WordTarget::open_file(path, false);
  if (!target) return std::move(target).error();
  auto value = target->read(offset, width);
  if (!value) return std::move(value).error();
  return PeekResult{*value, std::nullopt};
}

Result<WriteRecord> poke_process(pid_t pid, const PokeRequest& request) {
  if (!valid_width(request.width)) return bad_width(request.width);
  if (request.value > max_word_value(request.width))
    return Error{"poke", ErrorKind::invalid_argument, {},
                 fmt::format("{:#x} does not fit in {} bytes", request.value, request.width)};
  auto maps = read_live_maps(pid);
  if (!maps) return std::move(maps).error();
  auto mapping = find_target_mapping(*maps, request.address, request.width, request.match, true,
                                     fmt::format("poke pid {} {:#x}", pid, request.address));
  if (!mapping) return std::move(mapping).error();
  auto target = WordTarget::open_process(pid, true);
  if (!target) return std::move(target).error();
  auto record = write_checked(*target, &*mapping, request.address, request.width, request.value, request.expect);
  if (!record) return record;
  if (auto info = read_process(pid)) record->comm = info->comm;
  return record;
}

Result<WriteRecord> poke_file(const std::string& path, const PokeRequest& request) {
  if (!valid_width(request.width)) return bad_width(request.width);
  if (request.value > max_word_value(request.width))
    return Error{"poke", ErrorKind::invalid_argument, {},
                 fmt::format("{:#x} does not fit in {} bytes", request.value, request.width)};
  auto target = WordTarget::open_file(path, true);
  if (!target) return std::move(target).error();
  return write_checked(*target, nullptr, request.address, request.width, request.value, request.expect);
}

std::string format_mapping(const os::MapEntry& m) {
  std::string out = fmt::format("{:x}-{:x} {} {:08x}", m.start, m.end, m.perms, m.offset);
  if (!m.path.empty()) out += " " + m.path;
  return out;
}

std::string format_audit_line(const WriteRecord& r, std::chrono::system_clock::time_point when) {
  using namespace std::chrono;
  const auto since_epoch = when.time_since_epoch();
  const std::time_t secs = static_cast<std::time_t>(duration_cast<seconds>(since_epoch).count());
  const auto micros = duration_cast<microseconds>(since_epoch).count() % 1000000;
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z write ", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
  if (r.pid != 0) {
    out += fmt::format("pid={} comm=\"{}\" addr={:#x}", r.pid, escaped(r.comm), r.address);
  } else {
    out += fmt::format("file=\"{}\" offset={:#x}", escaped(r.file), r.address);
    if (r.gpa) out += fmt::format(" gpa={:#x}", *r.gpa);
  }
  out += fmt::format(" width={} old={:#x} new={:#x} readback={}", r.width, r.old_value, r.written,
                     r.read_back ? fmt::format("{:#x}", *r.read_back) : "ended");
  if (r.mapping) out += " mapping=" + escaped(format_mapping(*r.mapping));
  return out;
}

Result<AuditLog> AuditLog::open(const std::string& path) {
  AuditLog log;
  if (path.empty()) return log;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return os_error("open " + path, errno);
  log.owned_.reset(fd);
  log.fd_ = fd;
  return log;
}

Status AuditLog::record(const WriteRecord& record) const {
  const std::string line = format_audit_line(record, std::chrono::system_clock::now()) + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("write audit log", errno);
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace extmem::memtools
