#include "extmem/memtools/pagemap.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "extmem/memtools/processes.h"

namespace extmem::memtools {
namespace {

constexpr std::uint64_t kPfnMask = (std::uint64_t{1} << 55) - 1;  // bits 0-54
constexpr unsigned kSwapTypeBits = 5;                            // bits 0-4 of a swap entry

bool bit(std::uint64_t raw, unsigned n) { return ((raw >> n) & 1u) != 0; }

bool same_flags(const PageEntry& a, const PageEntry& b) {
  return a.present == b.present && a.swapped == b.swapped && a.file_or_shared == b.file_or_shared &&
         a.guard == b.guard && a.uffd_wp == b.uffd_wp && a.exclusive == b.exclusive && a.soft_dirty == b.soft_dirty &&
         a.pfn_hidden == b.pfn_hidden && a.pfn.has_value() == b.pfn.has_value() &&
         a.swap_type == b.swap_type && a.swap_offset.has_value() == b.swap_offset.has_value();
}

}  // namespace

std::uint64_t page_size() noexcept {
  static const std::uint64_t size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

bool has_cap_sys_admin() noexcept {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32))) != 0;
}

PageEntry decode_pagemap_entry(std::uint64_t raw, bool pfn_visible) noexcept {
  PageEntry e;
  e.raw = raw;
  e.present = bit(raw, 63);
  e.swapped = bit(raw, 62);
  e.file_or_shared = bit(raw, 61);
  e.guard = bit(raw, 58);
  e.uffd_wp = bit(raw, 57);
  e.exclusive = bit(raw, 56);
  e.soft_dirty = bit(raw, 55);
  const std::uint64_t low = raw & kPfnMask;
  // Frame 0 is never handed to user space and swap offset 0 is the swap
  // header, so a zero field on a present/swapped page means "withheld", even
  // when capget said we may see it (e.g. CAP_SYS_ADMIN only in a user namespace).
  if (e.present || e.swapped) e.pfn_hidden = !pfn_visible || low == 0;
  if (e.present && !e.pfn_hidden) e.pfn = low;
  if (e.swapped && !e.pfn_hidden) {
    e.swap_type = low & ((1u << kSwapTypeBits) - 1);
    e.swap_offset = low >> kSwapTypeBits;
  }
  return e;
}

std::string describe_flags(const PageEntry& e) {
  std::string out;
  auto add = [&out](bool on, const char* word) {
    if (!on) return;
    if (!out.empty()) out += ' ';
    out += word;
  };
  add(e.present, "present");
  add(e.swapped, "swapped");
  add(!e.present && !e.swapped, "not-present");
  add(e.exclusive, "exclusive");
  add(e.file_or_shared, "file/shared");
  add(e.soft_dirty, "soft-dirty");
  add(e.uffd_wp, "uffd-wp");
  add(e.guard, "guard");
  return out;
}

Result<PagemapReader> PagemapReader::open(pid_t pid) {
  const std::string path = pid == 0 ? "/proc/self/pagemap" : fmt::format("/proc/{}/pagemap", pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error("open " + path, errno);
  PagemapReader reader;
  reader.fd_.reset(fd);
  reader.pid_ = pid;
  reader.pfn_visible_ = has_cap_sys_admin();
  return reader;
}

Result<std::vector<PageEntry>> PagemapReader::read(std::uint64_t address, std::uint64_t count) const {
  const std::uint64_t page = address / page_size();
  std::vector<std::uint64_t> raw(count);
  std::size_t got = 0;
  const std::size_t want = count * sizeof(std::uint64_t);
  while (got < want) {
    const ssize_t n = ::pread(fd_.get(), reinterpret_cast<char*>(raw.data()) + got, want - got,
                              static_cast<off_t>(page * sizeof(std::uint64_t) + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(fmt::format("pread /proc/{}/pagemap at {:#x}", pid_ == 0 ? ::getpid() : pid_, address), errno);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  // The kernel answers 0 bytes both past the user address space and for a
  // process whose memory is gone (exited or zombie); only the second is an error.
  if (got == 0 && count > 0 && pid_ != 0 && !process_running(pid_))
    return os_error(fmt::format("pread /proc/{}/pagemap at {:#x}", pid_, address), ESRCH);
  std::vector<PageEntry> out;
  out.reserve(got / sizeof(std::uint64_t));
  for (std::size_t i = 0; i < got / sizeof(std::uint64_t); ++i)
    out.push_back(decode_pagemap_entry(raw[i], pfn_visible_));
  return out;
}

bool continues_run(const PageRun& run, const PageEntry& next) noexcept {
  const std::uint64_t n = run.pages;
  return same_flags(run.first, next) && (!next.pfn || *next.pfn == *run.first.pfn + n) &&
         (!next.swap_offset || *next.swap_offset == *run.first.swap_offset + n);
}

std::vector<PageRun> fold_pages(std::uint64_t start, const std::vector<PageEntry>& entries) {
  std::vector<PageRun> runs;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!runs.empty() && continues_run(runs.back(), entries[i]))
      ++runs.back().pages;
    else
      runs.push_back(PageRun{start + i * page_size(), 1, entries[i]});
  }
  return runs;
}

Result<Translation> translate(const PagemapReader& reader, std::uint64_t address) {
  auto entries = reader.read(address, 1);
  if (!entries) return std::move(entries).error();
  if (entries->empty())
    return Error{fmt::format("read pagemap at {:#x}", address), ErrorKind::unsupported, {},
                 "no pagemap entry: the address is outside the user address space"};
  Translation t;
  t.address = address;
  t.page = entries->front();
  if (t.page.pfn) t.physical = *t.page.pfn * page_size() + address % page_size();
  return t;
}

}  // namespace extmem::memtools
