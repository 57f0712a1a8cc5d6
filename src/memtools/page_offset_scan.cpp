#include "memtools/page_offset_scan.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "memtools/mapping_guard.h"
#include "memtools/ordered_pieces.h"

namespace extmem::memtools::detail {
namespace {

constexpr std::uint64_t kPiece = 16 << 20;  // bytes per unit of work, a multiple of every accepted page size
constexpr std::size_t kIovecs = IOV_MAX - 1;  // per preadv call
// From this many lanes on, one pread per page (NeedleRead::each) beats the
// page copies: see choose_read().
constexpr unsigned kEachFromLanes = 4;

// How a piece's needle bytes are read (choose_read picks one).
enum class NeedleRead {
  copy,  // read_copying: preadv of whole pages
  each,  // read_each: one pread per page
};

struct PieceResult {
  std::vector<std::uint64_t> hits;  // file offsets, increasing
  std::optional<Error> error;
};

// Where a piece's pages are and what is looked for; every offset in bytes from
// the start of the file.
struct PieceJob {
  int fd;
  const std::string& path;
  std::uint64_t size;              // of the file
  std::uint64_t lo, hi;            // the piece: [lo, hi)
  std::uint64_t page, off, n;      // page size, page offset of the needle, needle length
  std::vector<std::uint8_t>& slots;  // n bytes per page of the piece, filled here
};

// Reads [from, from + sum of iov lengths) into `iov`, resuming after short
// reads; returns the bytes read (fewer at end of file), or the error.
Result<std::uint64_t> preadv_all(const PieceJob& j, std::vector<iovec>& iov, std::uint64_t from) {
  std::uint64_t want = 0;
  for (const iovec& v : iov) want += v.iov_len;
  std::uint64_t got = 0;
  while (got < want) {
    // Skip the iovecs already filled (a short read resumes mid-list).
    std::size_t k = 0;
    std::uint64_t skip = got;
    while (k < iov.size() && skip >= iov[k].iov_len) skip -= iov[k++].iov_len;
    std::vector<iovec> rest(iov.begin() + static_cast<std::ptrdiff_t>(k), iov.end());
    rest[0].iov_base = static_cast<std::uint8_t*>(rest[0].iov_base) + skip;
    rest[0].iov_len -= skip;
    const ssize_t got_now = ::preadv(j.fd, rest.data(), static_cast<int>(rest.size()), static_cast<off_t>(from + got));
    if (got_now < 0 && errno == EINTR) continue;
    if (got_now < 0) return os_error(fmt::format("preadv {} at {:#x}", j.path, from + got), errno);
    if (got_now == 0) break;  // end of file: the file shrank (the caller reports it)
    got += static_cast<std::uint64_t>(got_now);
  }
  return got;
}

// NeedleRead::copy: preadv over whole pages, each page's needle bytes into its
// slot and the rest into `junk`, a page-sized buffer that stays in cache. Few
// system calls, but the kernel copies every byte of every page. Returns the
// number of pages whose slots were filled (every page whose needle lies in the
// file as it was when the scan began), or the error; a file that ended early
// (it shrank) is file_shrank's error.
Result<std::size_t> read_copying(const PieceJob& j) {
  // Pages whose needle lies wholly inside the file (the last ones may not).
  const std::size_t pages = j.lo + j.off + j.n > j.size
                                ? 0
                                : static_cast<std::size_t>(std::min((j.hi - j.lo + j.page - 1) / j.page,
                                                                    (j.size - j.off - j.n - j.lo) / j.page + 1));
  std::vector<std::uint8_t> junk(static_cast<std::size_t>(j.page));
  std::vector<iovec> iov;
  iov.reserve(kIovecs + 2);
  std::size_t first = 0;  // page that starts the current batch
  for (std::size_t p = 0; p < pages; ++p) {
    const std::uint64_t page_start = j.lo + p * j.page, slot = page_start + j.off;
    if (j.off > 0) iov.push_back({junk.data(), static_cast<std::size_t>(j.off)});
    iov.push_back({j.slots.data() + p * j.n, static_cast<std::size_t>(j.n)});
    // The rest of the page, up to the next page's needle; not after the last.
    const std::uint64_t tail = std::min(page_start + j.page, j.size) - (slot + j.n);
    if (tail > 0 && p + 1 < pages) iov.push_back({junk.data(), static_cast<std::size_t>(tail)});
    if (iov.size() >= kIovecs - 3 || p + 1 == pages) {
      const std::uint64_t from = j.lo + first * j.page;
      auto got = preadv_all(j, iov, from);
      if (!got) return std::move(got).error();
      iov.clear();
      // Pages whose needle bytes all arrived (a file that shrank stops early).
      if (j.lo + p * j.page + j.off + j.n > from + *got) return file_shrank(j.path, j.fd, j.size);
      first = p + 1;
    }
  }
  return pages;
}

// NeedleRead::each: one pread of the needle's bytes per page. More system
// calls than read_copying, but it touches one cache line of each page instead
// of copying the whole page, so it does not run into the memory bandwidth when
// many threads read at once. Returns the number of leading pages read (those
// whose needle lies in the file as it was when the scan began), or the error;
// a file that ended early (it shrank) is file_shrank's error.
Result<std::size_t> read_each(const PieceJob& j) {
  const std::size_t pages = static_cast<std::size_t>((j.hi - j.lo + j.page - 1) / j.page);
  for (std::size_t p = 0; p < pages; ++p) {
    const std::uint64_t at = j.lo + p * j.page + j.off;
    if (at + j.n > j.size) return p;
    std::uint64_t got = 0;
    while (got < j.n) {
      const ssize_t r = ::pread(j.fd, j.slots.data() + p * j.n + got, static_cast<std::size_t>(j.n - got),
                                static_cast<off_t>(at + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return os_error(fmt::format("pread {} at {:#x}", j.path, at + got), errno);
      if (r == 0) return file_shrank(j.path, j.fd, j.size);  // end of file before the needle: it shrank
      got += static_cast<std::uint64_t>(r);
    }
  }
  return pages;
}

// The read for `lanes` threads. EXTMEM_PAGE_OFFSET_READ=copy|each overrides
// the choice, for bench/scan_vs_rg.sh to time both forms on one machine; any
// other value is ignored. On 2 cores copying measured cheaper (0.45 against
// 0.55 CPU-s for 4 GiB); with 8 lanes on 16 cores the copies took 3x the CPU
// time of one lane (0.97 CPU-s), the memory bus rather than the cores being
// the limit, which one read per page does not meet.
NeedleRead choose_read(unsigned lanes) {
  if (const char* forced = std::getenv("EXTMEM_PAGE_OFFSET_READ")) {
    const std::string_view v(forced);
    if (v == "copy") return NeedleRead::copy;
    if (v == "each") return NeedleRead::each;
  }
  return lanes >= kEachFromLanes ? NeedleRead::each : NeedleRead::copy;
}

// A descriptor of its own for one piece's reads: threads reading through one
// shared descriptor all update its reference count on every call, which
// bounces one cache line between them. Reopening through /proc/self/fd gives
// the same file (even if renamed or deleted since); empty when that fails
// (no /proc), and the shared descriptor is used.
os::UniqueFd own_descriptor(int fd) {
  return os::UniqueFd(::open(fmt::format("/proc/self/fd/{}", fd).c_str(), O_RDONLY | O_CLOEXEC));
}

}  // namespace

bool page_offset_readable(const ScanQuery& q) {
  return q.kind == ScanQuery::Kind::bytes && q.page_offset && q.page_size <= (64 << 10) && !q.pattern.empty() &&
         *q.page_offset + q.pattern.size() <= q.page_size;
}

Result<bool> scan_page_offsets(int fd, const std::string& path, std::uint64_t size, const ScanQuery& q,
                               const HitSink& sink, unsigned workers, std::uint64_t& hits, std::uint64_t& bytes) {
  const std::uint64_t page = q.page_size, off = *q.page_offset, n = q.pattern.size();
  const std::size_t pieces = static_cast<std::size_t>((size + kPiece - 1) / kPiece);
  const NeedleRead how = choose_read(workers + 1);
  test_stop_after_map();  // the test hook of the mapped forms (mapping_guard.h), before anything is read
  auto work = [&](std::size_t index) {
    PieceResult r;
    const std::uint64_t lo = index * kPiece, hi = std::min(size, lo + kPiece);
    std::vector<std::uint8_t> slots(static_cast<std::size_t>((hi - lo + page - 1) / page * n));
    os::UniqueFd own = workers > 0 ? own_descriptor(fd) : os::UniqueFd();
    const PieceJob job{own.get() >= 0 ? own.get() : fd, path, size, lo, hi, page, off, n, slots};
    auto read = how == NeedleRead::each ? read_each(job) : read_copying(job);
    if (!read) {
      r.error = std::move(read).error();
      return r;
    }
    for (std::size_t p = 0; p < *read; ++p)
      if (std::memcmp(slots.data() + p * n, q.pattern.data(), n) == 0) r.hits.push_back(lo + p * page + off);
    return r;
  };
  std::optional<Error> failed;
  auto deliver = [&](std::size_t index, PieceResult&& r) {
    if (r.error) {
      failed = std::move(r.error);
      return false;
    }
    // The piece has been read whole: its bytes count even when a hit in it
    // meets --max (as for the mapped form).
    bytes = std::min(size, (index + 1) * kPiece);
    for (std::uint64_t at : r.hits) {
      ScanHit h;
      h.address = at;
      ++hits;
      if (!sink(h) || (q.max_hits != 0 && hits >= q.max_hits)) return false;
    }
    return true;
  };
  const bool complete = run_ordered_pieces<PieceResult>(pieces, workers, work, deliver);
  if (failed) return std::move(*failed);
  return complete;
}

}  // namespace extmem::memtools::detail
