#include "extmem/watch/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace extmem::watch {
namespace {

Error bad(const char* step, std::string_view what, std::string_view text) {
  return Error{step, ErrorKind::invalid_argument, {}, fmt::format("{} in \"{}\"", what, text.substr(0, 120))};
}

// Unsigned decimal at the start of `s` (after blanks); advances s past it.
bool take_u64(std::string_view& s, std::uint64_t& out) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  const char* first = s.data() + i;
  const char* last = s.data() + s.size();
  auto [p, ec] = std::from_chars(first, last, out, 10);
  if (ec != std::errc() || p == first) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return true;
}

bool take_i64(std::string_view& s, std::int64_t& out) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  const char* first = s.data() + i;
  auto [p, ec] = std::from_chars(first, s.data() + s.size(), out, 10);
  if (ec != std::errc() || p == first) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "   1234 kB" -> 1234; the unit must be kB.
bool kib_value(std::string_view v, std::uint64_t& out) {
  if (!take_u64(v, out)) return false;
  return trim(v) == "kB";
}

bool plain_value(std::string_view v, std::uint64_t& out) {
  if (!take_u64(v, out)) return false;
  return trim(v).empty();
}

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

Result<ProcStat> parse_stat(std::string_view text) {
  constexpr const char* step = "parse /proc/PID/stat";
  ProcStat st;
  const std::size_t open = text.find('(');
  const std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return bad(step, "no (comm)", text);
  std::string_view head = trim(text.substr(0, open));
  std::uint64_t pid = 0;
  if (!is_digits(head) || !take_u64(head, pid) || pid == 0 || pid > 0x7fffffff) return bad(step, "bad pid", text);
  st.pid = static_cast<pid_t>(pid);
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  std::string_view s = text.substr(close + 1);
  // Field 3: state (one character).
  if (s.size() < 2 || s[0] != ' ' || s[1] == ' ') return bad(step, "no state (field 3)", text);
  st.state = s[1];
  s.remove_prefix(2);
  std::int64_t ppid = 0;
  if (!take_i64(s, ppid) || ppid < 0 || ppid > 0x7fffffff) return bad(step, "bad ppid (field 4)", text);
  st.ppid = static_cast<pid_t>(ppid);
  // Fields 5..21 are skipped whole (pgrp ... itrealvalue) except 9 (flags); field 22 is starttime.
  for (int field = 5; field <= 21; ++field) {
    const std::size_t begin = s.find_first_not_of(' ');
    if (begin == std::string_view::npos || begin == 0) return bad(step, fmt::format("missing field {}", field), text);
    if (field == 9) {
      std::string_view f = s;
      if (!take_u64(f, st.flags) || (!f.empty() && f.front() != ' ')) return bad(step, "bad flags (field 9)", text);
    }
    s.remove_prefix(begin);
    s.remove_prefix(std::min(s.find(' '), s.size()));
  }
  if (!take_u64(s, st.start_ticks)) return bad(step, "bad starttime (field 22)", text);
  return st;
}

Result<ProcStatus> parse_status(std::string_view text) {
  constexpr const char* step = "parse /proc/PID/status";
  ProcStatus out;
  struct KibField {
    std::string_view key;
    std::optional<std::uint64_t> ProcStatus::*field;
  };
  static constexpr KibField kib_fields[] = {
      {"VmRSS", &ProcStatus::vm_rss_kib},       {"VmHWM", &ProcStatus::vm_hwm_kib},
      {"RssAnon", &ProcStatus::rss_anon_kib},   {"RssFile", &ProcStatus::rss_file_kib},
      {"RssShmem", &ProcStatus::rss_shmem_kib}, {"VmSwap", &ProcStatus::vm_swap_kib},
  };
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    if (key == "PPid") {
      std::uint64_t v = 0;
      if (!plain_value(value, v) || v > 0x7fffffff) return bad(step, "bad PPid", line);
      out.ppid = static_cast<pid_t>(v);
    } else if (key == "Threads") {
      std::uint64_t v = 0;
      if (!plain_value(value, v)) return bad(step, "bad Threads", line);
      out.threads = v;
    } else {
      for (const KibField& f : kib_fields) {
        if (key != f.key) continue;
        std::uint64_t v = 0;
        if (!kib_value(value, v)) return bad(step, fmt::format("bad {} (expected \"N kB\")", f.key), line);
        out.*(f.field) = v;
        break;
      }
    }
  }
  return out;
}

Result<std::uint64_t> parse_pss_total(std::string_view text) {
  constexpr const char* step = "parse smaps_rollup";
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // Exactly "Pss:", never "Pss_Anon:", "Pss_Dirty:", "SwapPss:".
    if (line.substr(0, 4) != "Pss:") continue;
    std::uint64_t v = 0;
    if (!kib_value(line.substr(4), v)) return bad(step, "bad Pss (expected \"N kB\")", line);
    return v;
  }
  return Error{step, ErrorKind::invalid_argument, {}, "no \"Pss:\" line"};
}

std::uint64_t count_lines(std::string_view text) noexcept {
  std::uint64_t n = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    const void* hit = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    if (hit == nullptr) return n + 1;  // a last line without its newline
    ++n;
    p = static_cast<const char*>(hit) + 1;
  }
  return n;
}

namespace {
bool code_is(const Error& e, int errnum) { return e.kind == ErrorKind::os && e.is_errno(errnum); }
}  // namespace

bool is_gone(const Error& e) noexcept { return code_is(e, ENOENT) || code_is(e, ESRCH); }
bool is_denied(const Error& e) noexcept { return code_is(e, EACCES) || code_is(e, EPERM); }

Result<ProcessDir> ProcessDir::open(pid_t pid) {
  const std::string path = fmt::format("/proc/{}", pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return os_error("open " + path, errno);
  return ProcessDir(pid, os::UniqueFd(fd));
}

Status ProcessDir::read(const char* name, std::string& buf) const {
  const int fd = ::openat(dir_.get(), name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error(fmt::format("open /proc/{}/{}", pid_, name), errno);
  os::UniqueFd owned(fd);
  if (buf.capacity() < 16384) buf.reserve(16384);
  buf.resize(buf.capacity());
  std::size_t used = 0;
  for (;;) {
    if (used == buf.size()) buf.resize(buf.size() * 2);
    const ssize_t n = ::read(fd, buf.data() + used, buf.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      buf.clear();
      return os_error(fmt::format("read /proc/{}/{}", pid_, name), err);
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  buf.resize(used);
  return {};
}

namespace {

// Calls fn(name) for each entry of the directory open at `fd` (consumed),
// skipping "." and "..". Returns 0 or an errno.
template <typename Fn>
int for_each_entry(int fd, Fn&& fn) {
  alignas(8) char block[32768];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, block, sizeof block);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    for (long off = 0; off < n;) {
      struct Dirent64 {
        ino64_t d_ino;
        off64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[1];
      };
      const auto* d = reinterpret_cast<const Dirent64*>(block + off);
      off += d->d_reclen;
      const char* nm = d->d_name;
      if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) continue;
      fn(std::string_view(nm));
    }
  }
}

}  // namespace

Result<std::uint64_t> ProcessDir::fd_count() const {
  const int fd = ::openat(dir_.get(), "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return os_error(fmt::format("open /proc/{}/fd", pid_), errno);
  os::UniqueFd owned(fd);
  std::uint64_t n = 0;
  if (int err = for_each_entry(fd, [&](std::string_view) { ++n; }); err != 0)
    return os_error(fmt::format("getdents /proc/{}/fd", pid_), err);
  return n;
}

Result<std::vector<pid_t>> ProcessDir::children(std::string& buf) const {
  const int fd = ::openat(dir_.get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return os_error(fmt::format("open /proc/{}/task", pid_), errno);
  os::UniqueFd owned(fd);
  std::vector<std::string> tids;
  if (int err = for_each_entry(fd, [&](std::string_view nm) { if (is_digits(nm)) tids.emplace_back(nm); }); err != 0)
    return os_error(fmt::format("getdents /proc/{}/task", pid_), err);
  std::vector<pid_t> kids;
  for (const std::string& tid : tids) {
    Status r = read(("task/" + tid + "/children").c_str(), buf);
    if (!r) {
      // A thread that ended since the listing has no children left to report.
      if (is_gone(r.error()) && tids.size() > 1) continue;
      return std::move(r).error();
    }
    std::string_view s = buf;
    std::uint64_t child = 0;
    while (take_u64(s, child))
      if (child > 0 && child <= 0x7fffffff) kids.push_back(static_cast<pid_t>(child));
  }
  return kids;
}

Result<std::uint64_t> ProcessDir::mapping_count(std::string& buf) const {
  Status r = read("maps", buf);
  if (!r) return std::move(r).error();
  return count_lines(buf);
}

bool shares_address_space(pid_t pid, pid_t other) noexcept {
  return ::syscall(SYS_kcmp, pid, other, KCMP_VM, 0, 0) == 0;
}

Result<std::vector<std::pair<pid_t, pid_t>>> list_all_processes(std::string& buf) {
  const int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return os_error("open /proc", errno);
  os::UniqueFd owned(fd);
  std::vector<pid_t> pids;
  if (int err = for_each_entry(fd, [&](std::string_view nm) {
        if (!is_digits(nm)) return;
        std::uint64_t v = 0;
        std::from_chars(nm.data(), nm.data() + nm.size(), v);
        if (v > 0 && v <= 0x7fffffff) pids.push_back(static_cast<pid_t>(v));
      });
      err != 0)
    return os_error("getdents /proc", err);
  std::vector<std::pair<pid_t, pid_t>> out;
  out.reserve(pids.size());
  for (pid_t pid : pids) {
    auto dir = ProcessDir::open(pid);
    if (!dir) continue;
    if (!dir->read("stat", buf)) continue;
    auto st = parse_stat(buf);
    if (st) out.emplace_back(pid, st->ppid);
  }
  return out;
}

}  // namespace extmem::watch
