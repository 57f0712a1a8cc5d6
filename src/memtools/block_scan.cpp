#include "extmem/memtools/block_scan.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "memtools/ordered_pieces.h"
#include "memtools/block_scan_bytes.h"
#include "memtools/entropy_kernel.h"
#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

constexpr std::size_t kPiece = 16 << 20;  // bytes per unit of work (a multiple of every block size up to 16M)
constexpr std::size_t kReadBytes = 256 << 10;  // bytes per pread of a file: a buffer that stays in L2
constexpr std::size_t kMaxReadBlock = 1 << 20;  // larger twin blocks are searched in the mapping
constexpr std::size_t kBatch = 256;             // blocks whose entropy sums are computed at once

// A whole file mapped read-only; empty files have no mapping.
struct MappedFile {
  os::UniqueFd fd;
  void* addr = MAP_FAILED;
  std::size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (addr != MAP_FAILED) ::munmap(addr, size);
  }
  const std::uint8_t* data() const { return static_cast<const std::uint8_t*>(addr); }
};

Status map_file(const std::string& path, MappedFile& m) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return os_error("open " + path, errno);
  m.fd = os::UniqueFd(raw);
  struct stat st {};
  if (::fstat(m.fd.get(), &st) != 0) return os_error("fstat " + path, errno);
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
    return Error{"open " + path, ErrorKind::invalid_argument, {}, "not a regular file or block device"};
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  if (S_ISBLK(st.st_mode)) {
    const off_t end = ::lseek(m.fd.get(), 0, SEEK_END);
    if (end < 0) return os_error("lseek(SEEK_END) " + path, errno);
    size = static_cast<std::uint64_t>(end);
  }
  if (size == 0) return {};
  m.size = static_cast<std::size_t>(size);
  m.addr = ::mmap(nullptr, m.size, PROT_READ, MAP_SHARED, m.fd.get(), 0);
  if (m.addr == MAP_FAILED) return os_error("mmap " + path, errno);
  (void)::madvise(m.addr, m.size, MADV_SEQUENTIAL);
  return {};
}

unsigned helper_threads() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::min(cores - 1, 7u);
}

// x * log2(x) for the counts of one block, so an entropy is a sum of table lookups.
std::vector<double> xlogx_table(std::size_t block) {
  std::vector<double> t(block + 1, 0.0);
  for (std::size_t c = 1; c <= block; ++c) t[c] = static_cast<double>(c) * std::log2(static_cast<double>(c));
  return t;
}

double entropy_with(const std::uint8_t* data, std::size_t size, const std::vector<double>& xlogx) {
  // The counts, and which values occur (a bit each): the sum then takes only
  // the values that occur, in increasing order, which adds exactly what the
  // sum over all 256 counts adds (every skipped term is +0.0), in far fewer
  // dependent additions.
  std::array<std::uint32_t, 256> counts{};
  std::uint64_t present[4] = {};
  for (std::size_t i = 0; i < size; ++i) {
    ++counts[data[i]];
    present[data[i] >> 6] |= 1ull << (data[i] & 63);
  }
  double sum = 0;
  for (int w = 0; w < 4; ++w)
    for (std::uint64_t bits = present[w]; bits != 0; bits &= bits - 1)
      sum += xlogx[counts[static_cast<std::size_t>(w * 64 + __builtin_ctzll(bits))]];
  const double n = static_cast<double>(size);
  return std::max(0.0, std::log2(n) - sum / n);
}

// Content hash of one block: eight independent lanes over 8-byte words, each
// step a bijection of its lane (xor the word, multiply by an odd constant,
// rotate), so a block differing in one word never hashes alike, and eight
// multiplies in flight keep pace with memory (perf: the hash was 69 % of a
// 4-lane version's time). Equality is always confirmed by memcmp: the hash
// only has to spread. The same pass tells whether the block is constant
// (every word equal to the first byte repeated): `constant` is set then.
std::uint64_t block_hash(const std::uint8_t* p, std::size_t size, bool& constant) {
  constexpr std::uint64_t k1 = 0x9e3779b185ebca87ull, k2 = 0xc2b2ae3d27d4eb4full;
  std::uint64_t lane[8];
  for (int l = 0; l < 8; ++l) lane[l] = k1 * static_cast<std::uint64_t>(2 * l + 1);
  const std::uint64_t repeated = 0x0101010101010101ull * p[0];
  std::uint64_t differs = 0;
  auto rotl = [](std::uint64_t v, int r) { return (v << r) | (v >> (64 - r)); };
  for (std::size_t i = 0; i + 64 <= size; i += 64) {
    for (int l = 0; l < 8; ++l) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      differs |= w ^ repeated;
      lane[l] = rotl((lane[l] ^ w) * k2, 29);
    }
  }
  constant = differs == 0;
  std::uint64_t h = k1;
  for (int l = 0; l < 8; ++l) h = rotl((h ^ lane[l]) * k1, 27);
  h ^= h >> 33;
  h *= k2;
  h ^= h >> 29;
  return h;
}

}  // namespace

Result<EntropyQuery> parse_entropy(std::string_view text, SyntaxError* syntax) {
  constexpr std::string_view kAccepted =
      "BITS[/BLOCK]: entropy in bits per byte (e.g. 4.5; at most log2 of the block size, 8 at most) and the block "
      "size in bytes, 8 to 64K (default 32), e.g. 4.5 or 7.5/4K";
  EntropyQuery q;
  const std::size_t slash = std::min(text.find('/'), text.size());
  // BITS: digits, optionally a '.' and more digits.
  std::size_t pos = 0;
  double bits = 0;
  bool any = false;
  while (pos < slash && text[pos] >= '0' && text[pos] <= '9') {
    bits = bits * 10 + (text[pos] - '0');
    any = true;
    ++pos;
    if (bits > 1000) return detail::syntax_failure(syntax, "entropy", text, pos - 1, "the number is too large", kAccepted);
  }
  if (pos < slash && text[pos] == '.') {
    ++pos;
    double scale = 0.1;
    while (pos < slash && text[pos] >= '0' && text[pos] <= '9') {
      bits += (text[pos] - '0') * scale;
      scale /= 10;
      any = true;
      ++pos;
    }
  }
  if (!any) return detail::syntax_failure(syntax, "entropy", text, pos, fmt::format("expected a number of bits, found {}", detail::quote_char(text, pos)), kAccepted);
  if (pos < slash)
    return detail::syntax_failure(syntax, "entropy", text, pos, fmt::format("unexpected {} in the bits", detail::quote_char(text, pos)), kAccepted);
  if (slash < text.size()) {
    detail::ScanFailure f;
    auto block = detail::scan_number(text, slash + 1, text.size(), NumberStyle::quantity, f);
    if (!block) return detail::syntax_failure(syntax, "entropy", text, f.column, f.problem, kAccepted);
    if (*block < 8 || *block > 65536)
      return detail::syntax_failure(syntax, "entropy", text, slash + 1, fmt::format("a block of {} bytes is outside 8 to 64K", *block), kAccepted);
    q.block = static_cast<std::size_t>(*block);
  }
  const double reachable = std::log2(static_cast<double>(std::min<std::size_t>(q.block, 256)));
  if (bits <= 0 || bits > reachable + 1e-9)
    return detail::syntax_failure(syntax, "entropy", text, 0,
                                  fmt::format("{:g} bits per byte cannot be reached in a {}-byte block (greater than 0, "
                                              "at most {:g})",
                                              bits, q.block, reachable),
                                  kAccepted);
  q.bits = bits;
  return q;
}

double byte_entropy(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::array<std::uint32_t, 256> counts{};
  for (std::size_t i = 0; i < size; ++i) ++counts[data[i]];
  double sum = 0;
  for (std::uint32_t c : counts)
    if (c > 0) sum += static_cast<double>(c) * std::log2(static_cast<double>(c));
  const double n = static_cast<double>(size);
  return std::max(0.0, std::log2(n) - sum / n);
}

namespace {

using detail::EntropySums;
using detail::file_shrank;
using detail::kEntropyError;
using detail::MappingGuard;

// Where the block searches get a piece's bytes: `spans(lo, hi, fn)` calls
// fn(p, at, len) for consecutive spans covering [lo, hi) (p: the bytes of
// offsets [at, at + len), len a multiple of the block) and returns the error
// that ended it early, if any.

// The bytes already in memory (a mapping, or a process's copied mappings).
struct MemorySpans {
  const std::uint8_t* data;
  template <class Fn>
  std::optional<Error> operator()(std::size_t lo, std::size_t hi, Fn&& fn) const {
    fn(data + lo, lo, hi - lo);
    return std::nullopt;
  }
};

// The bytes read from a file with pread, `step` bytes (a multiple of the
// block) at a time into a buffer that stays in this core's cache: a mapping
// costs page-table work for every page, entering and tearing down, which
// measured more than the searches (docs/memtools.md, "Where the scan time
// went"). A file found shorter than `size` is file_shrank's error.
struct ReadSpans {
  int fd;
  const std::string& path;
  std::uint64_t size;
  std::size_t step;
  template <class Fn>
  std::optional<Error> operator()(std::size_t lo, std::size_t hi, Fn&& fn) const {
    std::unique_ptr<std::uint8_t[]> buffer(new std::uint8_t[std::min(step, hi - lo)]);
    for (std::size_t at = lo; at < hi; at += step) {
      const std::size_t want = std::min(step, hi - at);
      std::size_t got = 0;
      while (got < want) {
        const ssize_t r = ::pread(fd, buffer.get() + got, want - got, static_cast<off_t>(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return os_error(fmt::format("pread {} at {:#x}", path, at + got), errno);
        if (r == 0) return file_shrank(path, fd, size);  // end of file before its size: it shrank
        got += static_cast<std::size_t>(r);
      }
      fn(buffer.get(), at, want);
    }
    return std::nullopt;
  }
};

// The bytes per read for blocks of `block` bytes: kReadBytes rounded down to
// whole blocks, one block at least.
std::size_t read_step(std::size_t block) { return std::max(block, kReadBytes - kReadBytes % block); }

template <class Spans>
BlockScanStats entropy_pieces(std::size_t size, const EntropyQuery& q, const EntropySink& sink, const Spans& spans,
                              const MappingGuard* guard, std::optional<Error>& failed) {
  BlockScanStats stats;
  if (size < q.block) return stats;
  const std::size_t usable = size - size % q.block;
  const std::vector<double> xlogx = xlogx_table(q.block);
  const EntropySums fast(q.block);
  // A piece is a whole number of blocks, so runs only need joining at piece borders.
  const std::size_t piece = kPiece - kPiece % q.block;
  const std::size_t pieces = (usable + piece - 1) / piece;
  std::optional<EntropyRun> open;  // a run that may continue into the next piece
  struct PieceRuns {
    std::vector<EntropyRun> runs;
    bool faulted = false;  // the mapping faulted by the end of the piece: void
    std::optional<Error> error;
  };
  auto work = [&](std::size_t i) {
    PieceRuns piece_runs;
    std::vector<EntropyRun>& runs = piece_runs.runs;
    const std::size_t lo = i * piece, hi = std::min(usable, lo + piece);
    std::uint64_t sums[kBatch];
    piece_runs.error = spans(lo, hi, [&](const std::uint8_t* p, std::size_t base, std::size_t len) {
      const std::size_t blocks = len / q.block;
      for (std::size_t first = 0; first < blocks; first += kBatch) {
        const std::size_t batch = std::min(kBatch, blocks - first);
        fast.sums(p + first * q.block, batch, sums);
        for (std::size_t k = 0; k < batch; ++k) {
          // The fixed-point entropy decides where it is clearly on one side
          // of the threshold and clearly inside the run's range; elsewhere
          // the exact value (byte_entropy's) is computed, so every decision
          // and every printed bit count is what the exact value gives.
          const double approx = fast.bits(sums[k]);
          if (approx + 1e-12 < q.bits - kEntropyError) continue;  // below the threshold, whatever the rounding
          const std::size_t at = base + (first + k) * q.block;
          EntropyRun* run = !runs.empty() && runs.back().offset + runs.back().bytes == at ? &runs.back() : nullptr;
          const bool exact = approx < q.bits + kEntropyError || run == nullptr ||
                             approx <= run->min_bits + kEntropyError || approx >= run->max_bits - kEntropyError;
          double h = approx;
          if (exact) {
            h = entropy_with(p + (first + k) * q.block, q.block, xlogx);
            if (h + 1e-12 < q.bits) continue;
          }
          if (run != nullptr) {
            run->bytes += q.block;
            if (exact) {
              run->min_bits = std::min(run->min_bits, h);
              run->max_bits = std::max(run->max_bits, h);
            }
          } else {
            runs.push_back({at, q.block, h, h});
          }
        }
      }
    });
    piece_runs.faulted = guard != nullptr && guard->faulted();
    return piece_runs;
  };
  auto deliver = [&](std::size_t i, PieceRuns&& piece_runs) {
    if (piece_runs.faulted) return false;
    if (piece_runs.error) {
      failed = std::move(piece_runs.error);
      return false;
    }
    // The piece has been searched whole: its bytes count even when a run in
    // it meets --max (as for scan --hex).
    stats.bytes = std::min(usable, (i + 1) * piece);
    for (EntropyRun& r : piece_runs.runs) {
      if (open && open->offset + open->bytes == r.offset) {
        open->bytes += r.bytes;
        open->min_bits = std::min(open->min_bits, r.min_bits);
        open->max_bits = std::max(open->max_bits, r.max_bits);
        continue;
      }
      if (open && !sink(*open)) return false;
      open = r;
    }
    return true;
  };
  const bool complete = detail::run_ordered_pieces<PieceRuns>(pieces, helper_threads(), work, deliver);
  if (complete && open && !sink(*open)) stats.stopped = true;
  if (!complete) stats.stopped = true;
  return stats;
}

// Content hash -> the offset of one block with that hash (whichever was seen
// first), shared by the threads hashing pieces: each block is compared with
// that one as it is hashed, while it is in cache, instead of afterwards with
// the first block of its group (which read everything twice). Blocks equal to
// it are one content; a block that differs (a hash collision) is sorted out
// after the scan. Sharded so that threads rarely meet on a lock.
class ReferenceBlocks {
 public:
  // The reference for `hash`, or nullopt when `offset` is now it.
  std::optional<std::uint64_t> find_or_add(std::uint64_t hash, std::uint64_t offset) {
    Shard& s = shards_[(hash >> 58) % kShards];
    std::lock_guard<std::mutex> lock(s.mutex);
    auto [it, inserted] = s.map.try_emplace(hash, offset);
    if (inserted) return std::nullopt;
    return it->second;
  }

 private:
  static constexpr std::size_t kShards = 64;
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::uint64_t, std::uint64_t> map;
  };
  Shard shards_[kShards];
};

// `spans` gives the bytes to hash; `at(offset)` the bytes of any block (the
// references, compared with).
template <class Spans, class At>
TwinResult twin_pieces(std::size_t size, const TwinQuery& q, const Spans& spans, At at,
                       const MappingGuard* guard, std::optional<Error>& failed) {
  TwinResult result;
  if (size < q.block) return result;
  const std::size_t usable = size - size % q.block;
  const std::size_t piece = std::max(kPiece, q.block);
  const std::size_t pieces = (usable + piece - 1) / piece;
  struct Seen {
    std::uint64_t hash, offset;
    bool same;  // equal to its hash's reference block
  };
  struct PieceResult {
    std::vector<Seen> seen;      // non-constant blocks, in offset order
    std::uint64_t constant = 0;
    bool faulted = false;        // the mapping faulted by the end of the piece: void
    std::optional<Error> error;
  };
  ReferenceBlocks references;
  auto work = [&](std::size_t i) {
    PieceResult r;
    const std::size_t lo = i * piece, hi = std::min(usable, lo + piece);
    r.seen.reserve((hi - lo) / q.block);
    r.error = spans(lo, hi, [&](const std::uint8_t* p, std::size_t base, std::size_t len) {
      for (std::size_t k = 0; k < len; k += q.block) {
        bool constant = false;
        const std::uint64_t h = block_hash(p + k, q.block, constant);
        if (constant) {
          ++r.constant;
          continue;
        }
        const auto ref = references.find_or_add(h, base + k);
        r.seen.push_back({h, base + k, !ref || std::memcmp(p + k, at(*ref), q.block) == 0});
      }
    });
    r.faulted = guard != nullptr && guard->faulted();
    return r;
  };
  // One group per hash while the pieces are delivered; split by content afterwards.
  struct Group {
    std::uint64_t hash;
    std::vector<std::uint64_t> same, other;  // offsets equal to the hash's reference block, and not
  };
  std::vector<Group> groups;
  std::unordered_map<std::uint64_t, std::uint32_t> by_hash;
  by_hash.reserve(usable / q.block / 4 + 16);
  auto deliver = [&](std::size_t i, PieceResult&& r) {
    if (r.faulted) return false;
    if (r.error) {
      failed = std::move(r.error);
      return false;
    }
    const std::size_t lo = i * piece;
    for (std::size_t k = 0; k < r.seen.size(); ++k) {
      const Seen& s = r.seen[k];
      auto [it, inserted] = by_hash.try_emplace(s.hash, 0);
      if (inserted) {
        if (q.max_distinct != 0 && groups.size() >= q.max_distinct) {
          by_hash.erase(it);
          // Stopped before this block: the counts are of the blocks before it
          // (the constant ones among them: those before it not in `seen`).
          const std::uint64_t constant_before = (s.offset - lo) / q.block - k;
          result.constant_blocks += constant_before;
          result.blocks += constant_before;
          result.bytes = s.offset;
          result.stopped = true;
          return false;
        }
        it->second = static_cast<std::uint32_t>(groups.size());
        groups.push_back({s.hash, {}, {}});
      }
      Group& g = groups[it->second];
      (s.same ? g.same : g.other).push_back(s.offset);
      ++result.blocks;
    }
    result.constant_blocks += r.constant;
    result.blocks += r.constant;
    result.bytes = std::min(usable, (i + 1) * piece);
    return true;
  };
  detail::run_ordered_pieces<PieceResult>(pieces, helper_threads(), work, deliver);
  if (failed || (guard != nullptr && guard->faulted())) return result;
  // Each hash's blocks by content: those equal to the reference are one; the
  // others (a 64-bit collision: in practice none) by comparing them. Offsets
  // arrive in increasing order, so each content's first is its lowest.
  for (Group& g : groups) {
    auto add = [&](std::vector<std::uint64_t>&& offsets) {
      ++result.distinct;
      if (offsets.size() >= 2) result.groups.push_back({g.hash, std::move(offsets)});
    };
    if (!g.same.empty()) add(std::move(g.same));
    std::vector<std::vector<std::uint64_t>> contents;
    for (std::uint64_t off : g.other) {
      auto match = std::find_if(contents.begin(), contents.end(), [&](const std::vector<std::uint64_t>& c) {
        return std::memcmp(at(c.front()), at(off), q.block) == 0;
      });
      if (match != contents.end()) match->push_back(off);
      else contents.push_back({off});
    }
    for (auto& c : contents) add(std::move(c));
  }
  std::sort(result.groups.begin(), result.groups.end(), [](const TwinGroup& a, const TwinGroup& b) {
    if (a.offsets.size() != b.offsets.size()) return a.offsets.size() > b.offsets.size();
    return a.offsets.front() < b.offsets.front();
  });
  return result;
}

}  // namespace

namespace detail {

BlockScanStats scan_entropy_bytes(const std::uint8_t* data, std::size_t size, const EntropyQuery& q,
                                  const EntropySink& sink, const MappingGuard* guard) {
  std::optional<Error> failed;  // memory is not read through calls that fail
  return entropy_pieces(size, q, sink, MemorySpans{data}, guard, failed);
}

TwinResult find_twins_bytes(const std::uint8_t* data, std::size_t size, const TwinQuery& q,
                            const MappingGuard* guard) {
  std::optional<Error> failed;
  return twin_pieces(size, q, MemorySpans{data}, [data](std::uint64_t off) { return data + off; }, guard, failed);
}

}  // namespace detail

Result<BlockScanStats> scan_entropy(const std::string& path, const EntropyQuery& q, const EntropySink& sink) {
  MappedFile m;
  if (auto st = map_file(path, m); !st) return std::move(st).error();
  if (m.size == 0) return BlockScanStats{};
  // Read, not searched in the mapping (ReadSpans says why); the mapping only sizes the file.
  detail::test_stop_after_map();  // the test hook of the mapped forms, before anything is read
  std::optional<Error> failed;
  BlockScanStats stats = entropy_pieces(m.size, q, sink, ReadSpans{m.fd.get(), path, m.size, read_step(q.block)},
                                        nullptr, failed);
  if (failed) return std::move(*failed);
  return stats;
}

Result<TwinResult> find_twins(const std::string& path, const TwinQuery& q) {
  MappedFile m;
  if (auto st = map_file(path, m); !st) return std::move(st).error();
  if (m.size == 0) return TwinResult{};
  const detail::MappingGuard guard(m.addr, m.size, m.fd.get(), path);  // a file that shrinks: an error, not SIGBUS
  const std::uint8_t* data = m.data();
  auto at = [data](std::uint64_t off) { return data + off; };
  std::optional<Error> failed;
  // Blocks are hashed from reads (ReadSpans says why) and compared with their
  // reference blocks in the mapping: only those pages are entered.
  TwinResult result = q.block <= kMaxReadBlock
                          ? twin_pieces(m.size, q, ReadSpans{m.fd.get(), path, m.size, read_step(q.block)}, at,
                                        &guard, failed)
                          : twin_pieces(m.size, q, MemorySpans{data}, at, &guard, failed);
  if (guard.shrank()) return guard.shrank_error();
  if (failed) return std::move(*failed);
  return result;
}

}  // namespace extmem::memtools
