#include "memtools/parallel_scan.h"
#include "memtools/ordered_pieces.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace extmem::memtools::detail {
namespace {

#ifdef MADV_POPULATE_READ
constexpr int kMadvPopulateRead = MADV_POPULATE_READ;
#else
constexpr int kMadvPopulateRead = 22;  // Linux 5.14 uapi value, for older headers
#endif

constexpr std::size_t kReadBytes = 256 << 10;  // hit starts per pread of scan_read: a buffer that stays in L2

// Bytes before and after a hit's first byte that a hit may need: the rest of
// the needle, the context words, the record's fields.
struct ReadMargins {
  std::size_t before = 0, after = 0;
};
ReadMargins read_margins(const ScanQuery& q) {
  switch (q.kind) {
    case ScanQuery::Kind::bytes: return {0, q.pattern.size()};
    case ScanQuery::Kind::value: return {q.context * q.width, (q.context + 1) * q.width};
    case ScanQuery::Kind::record:
      return {static_cast<std::size_t>(-q.record->min_offset()), static_cast<std::size_t>(q.record->max_end())};
  }
  return {};
}

// One piece's result, filled by the worker that claimed it.
struct Piece {
  std::optional<Error> error;         // a read failed (or found the file shorter): the scan ends here
  std::vector<ScanHit> hits;
  std::optional<std::size_t> resume;  // more than `cap` hits: search on from here
  bool faulted = false;               // the mapping faulted by the end of the search: void
};

}  // namespace

namespace {

// Searches one piece for a worker (or the calling thread): at most `cap` hits
// kept, `resume` set where it stopped for that; `before` and `after` are
// scan_pieces' (scan_mapped's say what they do).
template <class Search, class Before, class After, class Faulted>
Piece search_one_piece(std::size_t lo, std::size_t hi, const ScanQuery& unbounded, std::size_t cap, Search& search,
                       Before& before, After& after, Faulted& faulted) {
  before(lo, hi);
  Piece piece;
  std::uint64_t count = 0;
  auto complete = search(lo, hi, unbounded, [&](const ScanHit& h) {
    piece.hits.push_back(h);
    return piece.hits.size() < cap;
  }, count);
  if (!complete) {
    piece.error = std::move(complete).error();
  } else if (!*complete) {
    piece.resume = static_cast<std::size_t>(piece.hits.back().address) + 1;
  }
  piece.faulted = faulted();
  after(lo, hi);
  return piece;
}

// How the delivery of a piece ended.
enum class PieceDelivery {
  go_on,     // every hit delivered: on to the next piece
  stopped,   // the sink or --max stopped the scan in this piece (its bytes count)
  ended,     // the piece is void (a fault) or a read failed: the scan ends before its bytes
};

// Hands a piece's hits to `sink` in order (counted in `hits`, up to
// query.max_hits), then searches on from where a capped piece stopped, up to
// `hi`. A read error goes to `failed`.
template <class Search, class Faulted>
PieceDelivery deliver_piece(Piece& piece, std::size_t hi, const ScanQuery& query, const HitSink& sink,
                            std::uint64_t& hits, Search& search, Faulted& faulted, std::optional<Error>& failed) {
  if (piece.faulted) return PieceDelivery::ended;
  if (piece.error) {
    failed = std::move(piece.error);
    return PieceDelivery::ended;
  }
  for (const ScanHit& h : piece.hits) {
    ++hits;
    if (!sink(h) || (query.max_hits != 0 && hits >= query.max_hits)) return PieceDelivery::stopped;
  }
  if (!piece.resume) return PieceDelivery::go_on;
  // A hit found after a fault may lie in the zeros: checked before each.
  auto rest = search(*piece.resume, hi, query, [&](const ScanHit& h) { return !faulted() && sink(h); }, hits);
  if (!rest) {
    failed = std::move(rest).error();
    return PieceDelivery::ended;
  }
  return *rest && !faulted() ? PieceDelivery::go_on : PieceDelivery::stopped;
}

// The piece machinery of scan_mapped and scan_read: `search(lo, hi, query,
// sink, count)` searches [lo, hi) (hits starting there) and returns false when
// the sink stopped it, or the error of a read; `before(lo, hi)` and
// `after(lo, hi)` run around a worker's search of a whole piece; `faulted()`
// tells that what was read is void (a shrunk mapping). The pieces are shared
// by `workers` threads and this one (run_ordered_pieces), and delivered in order.
template <class Search, class Before, class After, class Faulted>
Result<bool> scan_pieces(std::size_t size, const ScanQuery& query, const HitSink& sink, unsigned workers,
                         std::size_t chunk, std::size_t cap, std::uint64_t& hits, std::uint64_t& bytes,
                         Search search, Before before, After after, Faulted faulted) {
  const std::size_t pieces = (size + chunk - 1) / chunk;
  ScanQuery unbounded = query;  // workers keep hits; the limit applies at delivery
  unbounded.max_hits = 0;
  auto work = [&](std::size_t index) {
    const std::size_t lo = index * chunk, hi = std::min(size, lo + chunk);
    return search_one_piece(lo, hi, unbounded, cap, search, before, after, faulted);
  };
  bool go_on = true;
  std::optional<Error> failed;
  auto deliver = [&](std::size_t index, Piece&& piece) {
    const std::size_t hi = std::min(size, (index + 1) * chunk);
    const PieceDelivery delivery = deliver_piece(piece, hi, query, sink, hits, search, faulted, failed);
    go_on = delivery == PieceDelivery::go_on;
    if (delivery != PieceDelivery::ended) bytes = hi;
    return go_on;
  };
  run_ordered_pieces<Piece>(pieces, workers, work, deliver);
  if (failed) return std::move(*failed);
  return go_on;
}

}  // namespace

bool scan_mapped(const std::uint8_t* data, std::size_t size, const ScanQuery& query, const HitSink& sink,
                 unsigned workers, std::size_t chunk, std::size_t cap, std::uint64_t& hits, std::uint64_t& bytes,
                 const MappingGuard* guard) {
  auto search = [&](std::size_t lo, std::size_t hi, const ScanQuery& q, const HitSink& s,
                    std::uint64_t& count) -> Result<bool> { return scan_buffer(data, size, 0, lo, hi, q, s, count); };
  // The page-offset form reads one word a page: entering the pages in one
  // call costs less CPU than a fault per 16 pages (measured: 0.23 s against
  // 0.28 s for 4 GiB). A search of every byte faults them in as it reads,
  // which measured cheaper than populating first (0.35 s against 0.38 s).
  auto before = [&](std::size_t lo, std::size_t hi) {
    if (query.page_offset) (void)::madvise(const_cast<std::uint8_t*>(data) + lo, hi - lo, kMadvPopulateRead);
  };
  // The page-offset form is done with these pages: dropping them from the
  // page tables here, on this thread, spreads the teardown over the workers
  // (MADV_DONTNEED takes the mmap lock shared) instead of leaving it all to
  // the final munmap on one thread (perf: unmap_page_range 10.5 % of the
  // run). A piece searched on from `resume` faults its pages in again.
  auto after = [&](std::size_t lo, std::size_t hi) {
    if (query.page_offset) (void)::madvise(const_cast<std::uint8_t*>(data) + lo, hi - lo, MADV_DONTNEED);
  };
  auto faulted = [&] { return guard != nullptr && guard->faulted(); };
  auto r = scan_pieces(size, query, sink, workers, chunk, cap, hits, bytes, search, before, after, faulted);
  return r && *r;  // a mapped search has no read to fail
}

Result<bool> scan_read(int fd, const std::string& path, std::uint64_t size, const ScanQuery& query,
                       const HitSink& sink, unsigned workers, std::size_t chunk, std::size_t cap,
                       std::uint64_t& hits, std::uint64_t& bytes) {
  const ReadMargins mg = read_margins(query);
  // Each read: kReadBytes of hits' first bytes, more when the margins are
  // large (a record's fields up to 1 MiB away), so the margins read twice
  // stay a small part of the reading.
  const std::size_t step = std::max(kReadBytes, 4 * (mg.before + mg.after));
  test_stop_after_map();  // the test hook of the mapped forms (mapping_guard.h), before anything is read
  auto search = [&](std::size_t lo, std::size_t hi, const ScanQuery& q, const HitSink& s,
                    std::uint64_t& count) -> Result<bool> {
    // One buffer per search, reused for each read: it stays in this core's cache.
    std::unique_ptr<std::uint8_t[]> buffer(new std::uint8_t[step + mg.before + mg.after]);
    for (std::size_t at = lo; at < hi; at += step) {
      const std::size_t end = std::min(hi, at + step);
      const std::uint64_t from = at >= mg.before ? at - mg.before : 0;
      const std::uint64_t to = std::min<std::uint64_t>(size, end + mg.after);
      const std::size_t want = static_cast<std::size_t>(to - from);
      std::size_t got = 0;
      while (got < want) {
        const ssize_t r = ::pread(fd, buffer.get() + got, want - got, static_cast<off_t>(from + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return os_error(fmt::format("pread {} at {:#x}", path, from + got), errno);
        if (r == 0) return file_shrank(path, fd, size);  // end of file before its size: it shrank
        got += static_cast<std::size_t>(r);
      }
      if (!scan_buffer(buffer.get(), want, from, static_cast<std::size_t>(at - from),
                       static_cast<std::size_t>(end - from), q, s, count))
        return false;
    }
    return true;
  };
  auto none = [](std::size_t, std::size_t) {};
  auto faulted = [] { return false; };
  return scan_pieces(static_cast<std::size_t>(size), query, sink, workers, chunk, cap, hits, bytes, search, none,
                     none, faulted);
}

}  // namespace extmem::memtools::detail
