// The process forms of the block searches (block_scan.h): the selected
// mappings are copied into one buffer, then searched as a file would be. A
// copy rather than reading as we go because --twins compares blocks found
// far apart, and one reading of each mapping makes every block's content
// that of one moment per mapping.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "extmem/memtools/block_scan.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/word_access.h"
#include "extmem/os/fd.h"
#include "memtools/block_scan_bytes.h"

namespace extmem::memtools {
namespace {

// One mapping's bytes in the copy.
struct Region {
  std::uint64_t va = 0;    // virtual address of its first byte
  std::uint64_t size = 0;  // bytes copied: a multiple of the block
  std::uint64_t at = 0;    // offset in the copy
};

// The copy: anonymous memory, unmapped on destruction.
struct ProcessCopy {
  void* addr = MAP_FAILED;
  std::size_t capacity = 0;  // bytes mapped
  std::uint64_t filled = 0;  // bytes of regions, back to back
  std::vector<Region> regions;
  std::vector<std::string> skipped;
  ProcessCopy() = default;
  ProcessCopy(ProcessCopy&& o) noexcept
      : addr(std::exchange(o.addr, MAP_FAILED)), capacity(o.capacity), filled(o.filled),
        regions(std::move(o.regions)), skipped(std::move(o.skipped)) {}
  ProcessCopy(const ProcessCopy&) = delete;
  ProcessCopy& operator=(const ProcessCopy&) = delete;
  ProcessCopy& operator=(ProcessCopy&&) = delete;
  ~ProcessCopy() {
    if (addr != MAP_FAILED) ::munmap(addr, capacity);
  }
  std::uint8_t* bytes() const { return static_cast<std::uint8_t*>(addr); }
  // The virtual address of copy offset `at` (which lies in a region).
  std::uint64_t va_of(std::uint64_t at) const {
    auto r = std::upper_bound(regions.begin(), regions.end(), at, [](std::uint64_t a, const Region& g) { return a < g.at; });
    --r;
    return r->va + (at - r->at);
  }
};

Error copy_error(std::string detail) {
  return Error{"copy mappings", ErrorKind::invalid_argument, {}, std::move(detail)};
}

// Copies the readable mappings `match` selects, each cut to a multiple of `unit` bytes.
Result<ProcessCopy> copy_mappings(pid_t pid, const MapSpec* match, std::uint64_t unit) {
  auto maps = read_live_maps(pid);
  if (!maps) return std::move(maps).error();
  const std::string name = fmt::format("/proc/{}/mem", pid);
  const int raw = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return os_error("open " + name, errno);
  const os::UniqueFd fd(raw);
  std::vector<const os::MapEntry*> chosen;
  std::uint64_t total = 0;
  for (const os::MapEntry& m : *maps) {
    if (m.perms.empty() || m.perms[0] != 'r') continue;
    if (match != nullptr && !match->matches(m)) continue;
    if (m.size() < unit) continue;
    chosen.push_back(&m);
    total += m.size() - m.size() % unit;
  }
  // Nothing selected is no error (the SPEC is valid): an empty copy, nothing
  // searched, as for scan --hex; the command says no mapping was selected.
  if (chosen.empty()) return ProcessCopy{};
  if (total > kMaxProcessBlockBytes)
    return copy_error(fmt::format("{} bytes of mappings selected, more than the {} GiB these searches copy: narrow --match",
                                  total, kMaxProcessBlockBytes >> 30));
  ProcessCopy c;
  c.capacity = static_cast<std::size_t>(total);
  c.addr = ::mmap(nullptr, c.capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (c.addr == MAP_FAILED) return os_error("mmap copy of the mappings", errno);
  for (const os::MapEntry* m : chosen) {
    const std::uint64_t size = m->size() - m->size() % unit;
    std::uint64_t got = 0;
    int failed = 0;
    while (got < size) {
      const ssize_t r = ::pread(fd.get(), c.bytes() + c.filled + got, static_cast<std::size_t>(size - got),
                                static_cast<off_t>(m->start + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        failed = r < 0 ? errno : 0;
        break;
      }
      got += static_cast<std::uint64_t>(r);
    }
    if (got < size) {
      if (!process_running(pid)) return os_error("pread " + name, ESRCH, "the process ended while its mappings were copied");
      // Left out whole ([vvar], device mappings): its place is reused by the next.
      c.skipped.push_back(fmt::format("{}: {}", format_mapping(*m), failed != 0 ? errno_code(failed) : "short read"));
      continue;
    }
    c.regions.push_back({m->start, size, c.filled});
    c.filled += size;
  }
  return c;
}

}  // namespace

Result<BlockScanStats> scan_entropy_process(pid_t pid, const MapSpec* match, const EntropyQuery& q,
                                            const EntropySink& sink) {
  auto copy = copy_mappings(pid, match, q.block);
  if (!copy) return std::move(copy).error();
  BlockScanStats stats;
  stats.skipped = copy->skipped;
  for (const Region& r : copy->regions) {
    const EntropySink at_va = [&](const EntropyRun& run) {
      EntropyRun moved = run;
      moved.offset += r.va;
      return sink(moved);
    };
    const BlockScanStats one = detail::scan_entropy_bytes(copy->bytes() + r.at, static_cast<std::size_t>(r.size), q, at_va);
    stats.bytes += one.bytes;
    if (one.stopped) {
      stats.stopped = true;
      break;
    }
  }
  return stats;
}

Result<TwinResult> find_twins_process(pid_t pid, const MapSpec* match, const TwinQuery& q) {
  auto copy = copy_mappings(pid, match, q.block);
  if (!copy) return std::move(copy).error();
  TwinResult result = detail::find_twins_bytes(copy->bytes(), static_cast<std::size_t>(copy->filled), q);
  // Regions lie in address order in the copy, so offsets stay increasing.
  for (TwinGroup& g : result.groups)
    for (std::uint64_t& off : g.offsets) off = copy->va_of(off);
  result.skipped = copy->skipped;
  return result;
}

}  // namespace extmem::memtools
