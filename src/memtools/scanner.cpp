#include "extmem/memtools/scanner.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "extmem/memtools/processes.h"
#include "extmem/os/fd.h"
#include "memtools/byte_search.h"
#include "memtools/page_offset_scan.h"
#include "memtools/parallel_scan.h"
#include "memtools/usable_cpus.h"
#include "memtools/image_file.h"

namespace extmem::memtools {
namespace {

constexpr std::size_t kProcessChunk = 1 << 20;  // bytes of /proc/PID/mem read at once
constexpr std::size_t kFileChunk = 16 << 20;    // bytes of a mapped file scanned per step
constexpr unsigned kMaxWorkers = 7;             // search threads besides the calling one
// The page-offset read is bound by per-page kernel work on each core, not by
// memory bandwidth, so it takes every CPU it may use (up to this many).
constexpr unsigned kMaxPageOffsetWorkers = 127;
constexpr std::size_t kPieceHitCap = 4096;      // hits a search thread keeps per piece

// Bytes before and after a hit's first byte that a hit may need: the rest of
// the needle, the context words, the record's fields.
struct Margins {
  std::size_t before = 0, after = 0;
};
Margins margins(const ScanQuery& q) {
  switch (q.kind) {
    case ScanQuery::Kind::bytes: return {0, q.pattern.size()};
    case ScanQuery::Kind::value: return {q.context * q.width, (q.context + 1) * q.width};
    case ScanQuery::Kind::record:
      return {static_cast<std::size_t>(-q.record->min_offset()), static_cast<std::size_t>(q.record->max_end())};
  }
  return {};
}

// The mapping of a file, unmapped on destruction.
struct FileMapping {
  void* addr = MAP_FAILED;
  std::size_t size = 0;
  ~FileMapping() {
    if (addr != MAP_FAILED) ::munmap(addr, size);
  }
};

}  // namespace

std::vector<std::uint8_t> ScanQuery::needle() const {
  switch (kind) {
    case Kind::bytes: return pattern;
    case Kind::value: return encode_word(value, width, order);
    case Kind::record: return record->anchor_bytes();
  }
  return {};
}

std::uint64_t ScanQuery::alignment() const {
  switch (kind) {
    case Kind::bytes: return 1;
    case Kind::value: return width;
    case Kind::record: return record->anchor().width;
  }
  return 1;
}

bool scan_buffer(const std::uint8_t* data, std::size_t size, std::uint64_t base, std::size_t lo, std::size_t hi,
                 const ScanQuery& q, const HitSink& sink, std::uint64_t& hits, const os::MapEntry* mapping) {
  hi = std::min(hi, size);
  if (lo >= hi) return true;
  const std::vector<std::uint8_t> needle = q.needle();
  const std::size_t n = needle.size();
  // Deliver the hit at data[p] if it passes the checks needle bytes cannot make.
  ScanHit hit;
  hit.mapping = mapping;
  auto deliver = [&](std::size_t p) -> bool {
    hit.address = base + p;
    hit.fields.clear();
    hit.before.clear();
    hit.after.clear();
    if (q.kind == ScanQuery::Kind::record) {
      const RecordTemplate& t = *q.record;
      if (static_cast<std::int64_t>(p) + t.min_offset() < 0 || p + static_cast<std::size_t>(t.max_end()) > size)
        return true;  // a field lies outside the data: no record here
      if (!t.matches(data + p)) return true;
      hit.fields = t.decode(data + p);
    } else if (q.kind == ScanQuery::Kind::value) {
      hit.fields.push_back(q.value);
      for (unsigned i = q.context; i >= 1; --i) {
        const std::size_t back = static_cast<std::size_t>(i) * q.width;
        hit.before.push_back(p >= back ? std::optional(decode_word(data + p - back, q.width, q.order)) : std::nullopt);
      }
      for (unsigned i = 1; i <= q.context; ++i) {
        const std::size_t at = p + static_cast<std::size_t>(i) * q.width;
        hit.after.push_back(at + q.width <= size ? std::optional(decode_word(data + at, q.width, q.order))
                                                 : std::nullopt);
      }
    }
    ++hits;
    if (!sink(hit)) return false;
    return q.max_hits == 0 || hits < q.max_hits;
  };

  if (q.page_offset) {
    // One comparison per page: the first position in [lo, hi) at the offset, then a page at a time.
    const std::uint64_t first_addr = base + lo;
    const std::uint64_t in_page = first_addr & (q.page_size - 1);
    std::uint64_t skip = (*q.page_offset + q.page_size - in_page) & (q.page_size - 1);
    for (std::size_t p = lo + skip; p < hi; p += q.page_size) {
      if (p + n > size) break;
      if (std::memcmp(data + p, needle.data(), n) == 0 && !deliver(p)) return false;
    }
    return true;
  }
  const std::uint64_t align = q.alignment();
  const std::uint8_t* end = data + std::min(size, hi + n - 1);
  if (align == n && n >= 2 && n <= 8) {
    // A value (or a record's anchor) only at its natural alignment: whole
    // vectors compared word by word from the first aligned position.
    const detail::WordSearcher words(needle);
    const std::size_t first = lo + static_cast<std::size_t>((align - ((base + lo) & (align - 1))) & (align - 1));
    if (first >= hi) return true;
    for (const std::uint8_t* at = data + first;;) {
      const std::uint8_t* found = words.find(at, end);
      if (found == end) break;
      const std::size_t p = static_cast<std::size_t>(found - data);
      if (p >= hi) break;
      if (!deliver(p)) return false;
      at = found + n;
    }
    return true;
  }
  const detail::ByteSearcher searcher(needle);
  for (const std::uint8_t* at = data + lo;;) {
    const std::uint8_t* found = searcher.find(at, end);
    if (found == end) break;
    const std::size_t p = static_cast<std::size_t>(found - data);
    if (p >= hi) break;
    if (((base + p) & (align - 1)) == 0 && !deliver(p)) return false;
    at = found + 1;
  }
  return true;
}

Result<ScanStats> scan_file(const std::string& path, const ScanQuery& q, const HitSink& sink) {
  auto image = detail::open_image(path);
  if (!image) return std::move(image).error();
  os::UniqueFd fd = std::move(image->fd);
  std::uint64_t size = image->size;
  ScanStats stats;
  if (size == 0) return stats;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // EXTMEM_PAGE_OFFSET_READ=map keeps the page-offset form on the mapping, on
  // every usable CPU, for bench/scan_vs_rg.sh to time against the reads.
  const char* forced = std::getenv("EXTMEM_PAGE_OFFSET_READ");
  const bool force_map = q.page_offset && forced != nullptr && std::string_view(forced) == "map";
  if (detail::page_offset_readable(q) && !force_map) {
    // A few bytes a page: read them, rather than map every page (page_offset_scan.h says why).
    const unsigned lanes = detail::usable_cpus();
    auto complete = detail::scan_page_offsets(fd.get(), path, size, q, sink,
                                              std::min(lanes - 1, kMaxPageOffsetWorkers), stats.hits, stats.bytes);
    if (!complete) return std::move(complete).error();
    stats.stopped = !*complete;
    return stats;
  }
  if (!q.page_offset) {
    // Every byte is searched: read, not mapped (parallel_scan.h says why).
    auto complete = detail::scan_read(fd.get(), path, size, q, sink, std::min(cores - 1, kMaxWorkers), kFileChunk,
                                      kPieceHitCap, stats.hits, stats.bytes);
    if (!complete) return std::move(complete).error();
    stats.stopped = !*complete;
    return stats;
  }
  FileMapping m;
  m.size = static_cast<std::size_t>(size);
  m.addr = ::mmap(nullptr, m.size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (m.addr == MAP_FAILED) return os_error("mmap " + path, errno);
  // Sequential: the kernel reads ahead aggressively and drops pages behind us.
  (void)::madvise(m.addr, m.size, MADV_SEQUENTIAL);
  const auto* data = static_cast<const std::uint8_t*>(m.addr);
  const detail::MappingGuard guard(m.addr, m.size, fd.get(), path);  // a file that shrinks: an error, not SIGBUS
  // On a page-cached file one thread is bound by its own page faults and
  // memory bandwidth, not the machine's: the other cores search pieces ahead
  // (bench/scan_vs_rg.sh: 4.3x ripgrep on 16 cores, near 1x on 2).
  const unsigned workers = q.page_offset ? std::min(detail::usable_cpus() - 1, kMaxPageOffsetWorkers)
                                         : std::min(cores - 1, kMaxWorkers);
  stats.stopped = !detail::scan_mapped(data, m.size, q, sink, workers, kFileChunk,
                                       kPieceHitCap, stats.hits, stats.bytes, &guard);
  if (guard.shrank()) return guard.shrank_error();
  return stats;
}

Result<ScanStats> scan_process(pid_t pid, const ScanQuery& q, const HitSink& sink, const MapSpec* match) {
  auto maps = os::read_maps(pid);
  if (!maps) return std::move(maps).error();
  const std::string name = fmt::format("/proc/{}/mem", pid);
  const int raw = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return os_error("open " + name, errno);
  os::UniqueFd fd(raw);
  const Margins mg = margins(q);
  std::vector<std::uint8_t> buffer(kProcessChunk + mg.before + mg.after);
  ScanStats stats;
  for (const os::MapEntry& m : *maps) {
    if (m.perms.empty() || m.perms[0] != 'r') continue;
    if (match != nullptr && !match->matches(m)) continue;
    for (std::uint64_t chunk = m.start; chunk < m.end; chunk += kProcessChunk) {
      const std::uint64_t chunk_end = std::min<std::uint64_t>(m.end, chunk + kProcessChunk);
      const std::uint64_t from = std::max<std::uint64_t>(m.start, chunk >= mg.before ? chunk - mg.before : 0);
      const std::uint64_t to = std::min<std::uint64_t>(m.end, chunk_end + mg.after);
      const std::size_t want = static_cast<std::size_t>(to - from);
      std::size_t got = 0;
      int failed = 0;
      while (got < want) {
        const ssize_t r = ::pread(fd.get(), buffer.data() + got, want - got, static_cast<off_t>(from + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
          failed = r < 0 ? errno : 0;
          break;
        }
        got += static_cast<std::size_t>(r);
      }
      if (got < want) {
        if (!process_running(pid)) return os_error("pread " + name, ESRCH, "the process ended during the scan");
        stats.skipped.push_back(fmt::format("{:x}-{:x} {} {}: {} at {:#x}", m.start, m.end, m.perms, m.path,
                                            failed != 0 ? errno_code(failed) : "short read", from + got));
        break;  // the rest of this mapping is unreadable too, in practice
      }
      stats.bytes += chunk_end - chunk;
      const std::size_t lo = static_cast<std::size_t>(chunk - from);
      const std::size_t hi = static_cast<std::size_t>(chunk_end - from);
      if (!scan_buffer(buffer.data(), want, from, lo, hi, q, sink, stats.hits, &m)) {
        stats.stopped = true;
        return stats;
      }
    }
  }
  return stats;
}

}  // namespace extmem::memtools
