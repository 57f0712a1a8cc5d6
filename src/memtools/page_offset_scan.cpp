#include "memtools/page_offset_scan.h"

#include <limits.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "memtools/ordered_pieces.h"

namespace extmem::memtools::detail {
namespace {

constexpr std::uint64_t kPiece = 16 << 20;  // bytes per unit of work, a multiple of every accepted page size
constexpr std::size_t kIovecs = IOV_MAX - 1;  // per preadv call

struct PieceResult {
  std::vector<std::uint64_t> hits;  // file offsets, increasing
  std::optional<Error> error;
};

}  // namespace

bool page_offset_readable(const ScanQuery& q) {
  return q.kind == ScanQuery::Kind::bytes && q.page_offset && q.page_size <= (64 << 10) && !q.pattern.empty() &&
         *q.page_offset + q.pattern.size() <= q.page_size;
}

Result<bool> scan_page_offsets(int fd, const std::string& path, std::uint64_t size, const ScanQuery& q,
                               const HitSink& sink, unsigned workers, std::uint64_t& hits, std::uint64_t& bytes) {
  const std::uint64_t page = q.page_size, off = *q.page_offset, n = q.pattern.size();
  const std::size_t pieces = static_cast<std::size_t>((size + kPiece - 1) / kPiece);
  auto work = [&](std::size_t index) {
    PieceResult r;
    const std::uint64_t lo = index * kPiece, hi = std::min(size, lo + kPiece);
    const std::size_t pages = static_cast<std::size_t>((hi - lo + page - 1) / page);
    // Slots for the needle-sized bytes of each page; everything else lands in `junk`.
    std::vector<std::uint8_t> slots(pages * n), junk(static_cast<std::size_t>(page));
    std::vector<iovec> iov;
    iov.reserve(kIovecs + 2);
    std::size_t first_page = 0;  // of the current batch
    auto flush = [&](std::size_t end_page, std::uint64_t from) -> bool {
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
        const ssize_t got_now = ::preadv(fd, rest.data(), static_cast<int>(rest.size()), static_cast<off_t>(from + got));
        if (got_now < 0 && errno == EINTR) continue;
        if (got_now < 0) {
          r.error = os_error(fmt::format("preadv {} at {:#x}", path, from + got), errno);
          return false;
        }
        if (got_now == 0) break;  // end of file: the file shrank; what was read still counts
        got += static_cast<std::uint64_t>(got_now);
      }
      for (std::size_t p = first_page; p < end_page; ++p) {
        const std::uint64_t at = lo + p * page + off;
        if (at + n > from + got) break;
        if (std::memcmp(slots.data() + p * n, q.pattern.data(), n) == 0) r.hits.push_back(at);
      }
      iov.clear();
      return true;
    };
    std::uint64_t batch_from = lo;
    for (std::size_t p = 0; p < pages; ++p) {
      const std::uint64_t page_start = lo + p * page;
      const std::uint64_t slot = page_start + off;
      if (slot + n > size) break;  // the needle would run past the end of the file
      if (off > 0) iov.push_back({junk.data(), static_cast<std::size_t>(off)});
      iov.push_back({slots.data() + p * n, static_cast<std::size_t>(n)});
      const std::uint64_t tail = std::min(page_start + page, size) - (slot + n);
      if (tail > 0 && p + 1 < pages) iov.push_back({junk.data(), static_cast<std::size_t>(tail)});
      if (iov.size() >= kIovecs - 3 || p + 1 == pages) {
        if (!flush(p + 1, batch_from)) return r;
        first_page = p + 1;
        batch_from = lo + (p + 1) * page;
      }
    }
    if (!iov.empty()) (void)flush(pages, batch_from);
    return r;
  };
  std::optional<Error> failed;
  auto deliver = [&](std::size_t index, PieceResult&& r) {
    for (std::uint64_t at : r.hits) {
      ScanHit h;
      h.address = at;
      ++hits;
      if (!sink(h) || (q.max_hits != 0 && hits >= q.max_hits)) return false;
    }
    if (r.error) {
      failed = std::move(r.error);
      return false;
    }
    bytes = std::min(size, (index + 1) * kPiece);
    return true;
  };
  const bool complete = run_ordered_pieces<PieceResult>(pieces, workers, work, deliver);
  if (failed) return std::move(*failed);
  return complete;
}

}  // namespace extmem::memtools::detail
