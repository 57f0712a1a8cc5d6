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
#include <unordered_map>

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "memtools/ordered_pieces.h"
#include "memtools/block_scan_bytes.h"
#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

constexpr std::size_t kPiece = 16 << 20;  // bytes per unit of work (a multiple of every block size up to 16M)

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
  std::array<std::uint32_t, 256> counts{};
  for (std::size_t i = 0; i < size; ++i) ++counts[data[i]];
  double sum = 0;
  for (std::uint32_t c : counts) sum += xlogx[c];
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

namespace detail {

BlockScanStats scan_entropy_bytes(const std::uint8_t* data, std::size_t size, const EntropyQuery& q,
                                  const EntropySink& sink, const MappingGuard* guard) {
  BlockScanStats stats;
  if (size < q.block) return stats;
  const std::size_t usable = size - size % q.block;
  const std::vector<double> xlogx = xlogx_table(q.block);
  // A piece is a whole number of blocks, so runs only need joining at piece borders.
  const std::size_t piece = kPiece - kPiece % q.block;
  const std::size_t pieces = (usable + piece - 1) / piece;
  std::optional<EntropyRun> open;  // a run that may continue into the next piece
  struct PieceRuns {
    std::vector<EntropyRun> runs;
    bool faulted = false;  // the mapping faulted by the end of the piece: void
  };
  auto work = [&](std::size_t i) {
    PieceRuns piece_runs;
    std::vector<EntropyRun>& runs = piece_runs.runs;
    const std::size_t lo = i * piece, hi = std::min(usable, lo + piece);
    for (std::size_t at = lo; at < hi; at += q.block) {
      const double h = entropy_with(data + at, q.block, xlogx);
      if (h + 1e-12 < q.bits) continue;
      if (!runs.empty() && runs.back().offset + runs.back().bytes == at) {
        runs.back().bytes += q.block;
        runs.back().min_bits = std::min(runs.back().min_bits, h);
        runs.back().max_bits = std::max(runs.back().max_bits, h);
      } else {
        runs.push_back({at, q.block, h, h});
      }
    }
    piece_runs.faulted = guard != nullptr && guard->faulted();
    return piece_runs;
  };
  auto deliver = [&](std::size_t i, PieceRuns&& piece_runs) {
    if (piece_runs.faulted) return false;
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

TwinResult find_twins_bytes(const std::uint8_t* data, std::size_t size, const TwinQuery& q,
                            const MappingGuard* guard) {
  TwinResult result;
  if (size < q.block) return result;
  const std::size_t usable = size - size % q.block;
  const std::size_t piece = std::max(kPiece, q.block);
  const std::size_t pieces = (usable + piece - 1) / piece;
  struct Seen {
    std::uint64_t hash, offset;
  };
  struct PieceResult {
    std::vector<Seen> seen;      // non-constant blocks, in offset order
    std::uint64_t constant = 0;
    bool faulted = false;        // the mapping faulted by the end of the piece: void
  };
  auto work = [&](std::size_t i) {
    PieceResult r;
    const std::size_t lo = i * piece, hi = std::min(usable, lo + piece);
    r.seen.reserve((hi - lo) / q.block);
    for (std::size_t at = lo; at < hi; at += q.block) {
      bool constant = false;
      const std::uint64_t h = block_hash(data + at, q.block, constant);
      if (constant) {
        ++r.constant;
        continue;
      }
      r.seen.push_back({h, at});
    }
    r.faulted = guard != nullptr && guard->faulted();
    return r;
  };
  // One group per distinct content; a hash shared by different contents (found
  // by the check after the scan) chains its groups through `next` (index + 1; 0 ends the chain).
  struct Group {
    std::uint64_t first;
    std::uint32_t next = 0;
    bool split = false;  // its hash has more than one content: members are compared as they come
    std::vector<std::uint64_t> more;
  };
  std::vector<Group> groups;
  std::unordered_map<std::uint64_t, std::uint32_t> by_hash;
  by_hash.reserve(usable / q.block / 4 + 16);
  auto deliver = [&](std::size_t i, PieceResult&& r) {
    if (r.faulted) return false;
    const std::size_t lo = i * piece;
    for (std::size_t k = 0; k < r.seen.size(); ++k) {
      const Seen& s = r.seen[k];
      // A block joins the group of its hash; that it really has the group's
      // content is checked afterwards, in parallel (below).
      auto [it, inserted] = by_hash.try_emplace(s.hash, 0);
      if (!inserted) {
        groups[it->second].more.push_back(s.offset);
        ++result.blocks;
        continue;
      }
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
      groups.push_back({s.offset, 0, false, {}});
      ++result.blocks;
    }
    result.constant_blocks += r.constant;
    result.blocks += r.constant;
    result.bytes = std::min(usable, (i + 1) * piece);
    return true;
  };
  detail::run_ordered_pieces<PieceResult>(pieces, helper_threads(), work, deliver);
  // The deferred check: every member of a group whose hash had one content so
  // far is compared with the group's first block, groups spread over the
  // cores. A member that differs (a hash collision) is moved to a group of
  // its own content, found by comparing, so the result is exact.
  std::vector<std::vector<std::uint64_t>> strays(groups.size());
  {
    std::atomic<std::size_t> next{0};
    auto check = [&] {
      for (std::size_t k; (k = next.fetch_add(1)) < groups.size();) {
        Group& g = groups[k];
        auto keep = std::remove_if(g.more.begin(), g.more.end(), [&](std::uint64_t off) {
          const bool differs = std::memcmp(data + g.first, data + off, q.block) != 0;
          if (differs) strays[k].push_back(off);
          return differs;
        });
        g.more.erase(keep, g.more.end());
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < helper_threads(); ++t) pool.emplace_back(check);
    check();
    for (std::thread& t : pool) t.join();
  }
  for (std::size_t k = 0; k < strays.size(); ++k) {
    for (std::uint64_t off : strays[k]) {
      // Place it among the groups of the same hash by content (making a new one when none matches).
      bool placed = false;
      for (std::size_t c = k; c < groups.size(); c = groups[c].next - 1) {
        if (c != k && std::memcmp(data + groups[c].first, data + off, q.block) == 0) {
          groups[c].more.push_back(off);
          placed = true;
          break;
        }
        if (groups[c].next == 0) break;
      }
      if (!placed) {
        groups.push_back({off, 0, true, {}});
        Group* last = &groups[k];
        while (last->next != 0) last = &groups[last->next - 1];
        last->next = static_cast<std::uint32_t>(groups.size());
      }
    }
  }
  for (Group& g : groups) std::sort(g.more.begin(), g.more.end());
  result.distinct = groups.size();
  for (const Group& g : groups) {
    if (g.more.empty()) continue;
    bool constant = false;
    TwinGroup t{block_hash(data + g.first, q.block, constant), {g.first}};
    t.offsets.insert(t.offsets.end(), g.more.begin(), g.more.end());
    result.groups.push_back(std::move(t));
  }
  std::sort(result.groups.begin(), result.groups.end(), [](const TwinGroup& a, const TwinGroup& b) {
    if (a.offsets.size() != b.offsets.size()) return a.offsets.size() > b.offsets.size();
    return a.offsets.front() < b.offsets.front();
  });
  return result;
}

}  // namespace detail

Result<BlockScanStats> scan_entropy(const std::string& path, const EntropyQuery& q, const EntropySink& sink) {
  MappedFile m;
  if (auto st = map_file(path, m); !st) return std::move(st).error();
  if (m.size == 0) return BlockScanStats{};
  const detail::MappingGuard guard(m.addr, m.size, m.fd.get(), path);  // a file that shrinks: an error, not SIGBUS
  BlockScanStats stats = detail::scan_entropy_bytes(m.data(), m.size, q, sink, &guard);
  if (guard.shrank()) return guard.shrank_error();
  return stats;
}

Result<TwinResult> find_twins(const std::string& path, const TwinQuery& q) {
  MappedFile m;
  if (auto st = map_file(path, m); !st) return std::move(st).error();
  if (m.size == 0) return TwinResult{};
  const detail::MappingGuard guard(m.addr, m.size, m.fd.get(), path);  // a file that shrinks: an error, not SIGBUS
  TwinResult result = detail::find_twins_bytes(m.data(), m.size, q, &guard);
  if (guard.shrank()) return guard.shrank_error();
  return result;
}

}  // namespace extmem::memtools
