#include "extmem/memtools/block_scan.h"

#include <sys/mman.h>
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

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "memtools/ordered_pieces.h"
#include "memtools/block_scan_bytes.h"
#include "memtools/entropy_kernel.h"
#include "memtools/scan.h"
#include "memtools/image_file.h"

namespace extmem::memtools {
namespace {

constexpr std::size_t kPiece = 16 << 20;  // bytes per unit of work (a multiple of every block size up to 16M)
constexpr std::size_t kReadBytes = 256 << 10;  // bytes per pread of a file: a buffer that stays in L2
constexpr std::size_t kMaxReadBlock = 1 << 20;  // larger twin blocks are searched in the mapping
constexpr std::size_t kBatch = 256;             // blocks whose entropy sums are computed at once
constexpr std::size_t kPrefetchBytes = 64 << 10;  // of a twin's reference block, asked for before its compare

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
  auto image = detail::open_image(path);
  if (!image) return std::move(image).error();
  m.fd = std::move(image->fd);
  const std::uint64_t size = image->size;
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

#if defined(__x86_64__)
// The grouping hash on AVX2: each 32-byte chunk XORed with a key of its place
// in a 512-byte stripe (16 keys), its 32-bit halves multiplied and added,
// with the chunk itself, to one of four accumulators; after each stripe the
// accumulators are scrambled (xorshift and a multiply), so chunks trading
// places change the hash. About half of block_hash's time (perf, 4K
// blocks), which matters as every block is hashed.
struct alignas(32) GroupKeys {
  std::uint64_t key[16][4];
  GroupKeys() {
    std::uint64_t x = 0x243f6a8885a308d3ull;  // splitmix64 from the digits of pi
    for (auto& k : key)
      for (auto& w : k) {
        x += 0x9e3779b97f4a7c15ull;
        std::uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        w = z ^ (z >> 31);
      }
  }
};
const GroupKeys kGroupKeys;

// The AVX2 hashes' last step: the accumulator lanes folded into one 64-bit
// value from `seed`, then mixed so that every lane bit reaches every result bit.
template <std::size_t N>
std::uint64_t fold_lanes(const std::uint64_t (&lanes)[N], std::uint64_t seed) {
  std::uint64_t h = seed;
  for (std::uint64_t lane : lanes) {
    h ^= lane;
    h *= 0xc2b2ae3d27d4eb4full;
    h = (h << 31) | (h >> 33);
  }
  h ^= h >> 33;
  h *= 0x9e3779b185ebca87ull;
  h ^= h >> 29;
  return h;
}

// One scrambling round of the AVX2 hashes' four accumulators: each 64-bit
// lane's high bits folded down, then multiplied by `prime` (both halves).
__attribute__((target("avx2"), always_inline)) inline void scramble(__m256i (&acc)[4], __m256i prime) {
  for (int a = 0; a < 4; ++a) {
    const __m256i x = _mm256_xor_si256(acc[a], _mm256_srli_epi64(acc[a], 47));
    const __m256i lo = _mm256_mul_epu32(x, prime);
    const __m256i hi = _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), prime), 32);
    acc[a] = _mm256_add_epi64(lo, hi);
  }
}

// (No lambdas inside: they would not inherit the target.)
__attribute__((target("avx2"))) std::uint64_t group_hash_avx2(const std::uint8_t* p, std::size_t size, bool& constant) {
  // Constant blocks first, cheaply: almost every other block differs from
  // its first byte within 64 bytes.
  const __m256i first = _mm256_set1_epi8(static_cast<char>(p[0]));
  __m256i diff = _mm256_or_si256(_mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), first),
                                 _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)), first));
  if (_mm256_testz_si256(diff, diff) != 0)
    for (std::size_t i = 64; i < size; i += 32)
      diff = _mm256_or_si256(diff, _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), first));
  constant = _mm256_testz_si256(diff, diff) != 0;
  if (constant) return 0;  // left out by the caller: no hash needed (a zero page is one in four of the bench image)
  const __m256i* keys = reinterpret_cast<const __m256i*>(kGroupKeys.key);
  __m256i acc[4];
  for (int a = 0; a < 4; ++a) acc[a] = _mm256_load_si256(keys + 15 - a);
  const __m256i prime = _mm256_set1_epi32(static_cast<int>(0x9e3779b1u));
#define EXTMEM_CHUNK(at, j)                                                                                   \
  do {                                                                                                       \
    const __m256i d_ = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + (at)));                     \
    const __m256i dk_ = _mm256_xor_si256(d_, _mm256_load_si256(keys + (j)));                                \
    const __m256i product_ = _mm256_mul_epu32(dk_, _mm256_srli_epi64(dk_, 32));                             \
    acc[(j)&3] = _mm256_add_epi64(acc[(j)&3], _mm256_add_epi64(product_, _mm256_shuffle_epi32(d_, 0x4e))); \
  } while (false)
  std::size_t at = 0;
  for (; at + 512 <= size; at += 512) {
    for (int j = 0; j < 16; ++j) EXTMEM_CHUNK(at + 32 * static_cast<std::size_t>(j), j);
    scramble(acc, prime);
  }
  for (int j = 0; at < size; at += 32, ++j) EXTMEM_CHUNK(at, j);  // blocks of 64 to 256 bytes
  scramble(acc, prime);
#undef EXTMEM_CHUNK
  alignas(32) std::uint64_t lanes[16];
  for (int a = 0; a < 4; ++a) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes + 4 * a), acc[a]);
  return fold_lanes(lanes, 0x9e3779b185ebca87ull ^ size);
}

// The first grouping key of a block of 1K or more: group_hash_avx2's mixing
// over a sample, one 32-byte chunk of every 256 bytes (its place in the
// stripe moving by five chunks from stripe to stripe, so eight stripes in a
// row sample all eight places) and the block's last 32 bytes; an eighth of
// the block. Equal blocks have equal samples, which is all grouping needs:
// each block is still compared with its key's reference byte for byte, and
// one that differs gets a second key, the hash of all its bytes
// (twin_pieces). `sample_constant`: every sampled byte equals the first (the
// block may be constant; the caller looks at all of it).
__attribute__((target("avx2"))) std::uint64_t sampled_hash_avx2(const std::uint8_t* p, std::size_t size,
                                                               bool& sample_constant) {
  const __m256i first = _mm256_set1_epi8(static_cast<char>(p[0]));
  const __m256i* keys = reinterpret_cast<const __m256i*>(kGroupKeys.key);
  const __m256i prime = _mm256_set1_epi32(static_cast<int>(0x9e3779b1u));
  __m256i acc[4];
  for (int a = 0; a < 4; ++a) acc[a] = _mm256_load_si256(keys + 15 - a);
  __m256i diff = _mm256_setzero_si256();
#define EXTMEM_SAMPLE(at, j, a)                                                                                  \
  do {                                                                                                         \
    const __m256i d_ = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + (at)));                       \
    diff = _mm256_or_si256(diff, _mm256_xor_si256(d_, first));                                               \
    const __m256i dk_ = _mm256_xor_si256(d_, _mm256_load_si256(keys + ((j)&15)));                            \
    const __m256i product_ = _mm256_mul_epu32(dk_, _mm256_srli_epi64(dk_, 32));                               \
    acc[a] = _mm256_add_epi64(acc[a], _mm256_add_epi64(product_, _mm256_shuffle_epi32(d_, 0x4e)));           \
  } while (false)
  // size is a power of two of 1K or more: whole groups of four stripes, so
  // each accumulator is named (an index by variable kept them in memory).
  const std::size_t stripes = size / 256;
  for (std::size_t j = 0; j < stripes; j += 4) {
    EXTMEM_SAMPLE(256 * j + 32 * ((j * 5) & 7), j + 0, 0);
    EXTMEM_SAMPLE(256 * (j + 1) + 32 * (((j + 1) * 5) & 7), j + 1, 1);
    EXTMEM_SAMPLE(256 * (j + 2) + 32 * (((j + 2) * 5) & 7), j + 2, 2);
    EXTMEM_SAMPLE(256 * (j + 3) + 32 * (((j + 3) * 5) & 7), j + 3, 3);
    if ((j & 15) == 12) scramble(acc, prime);
  }
  EXTMEM_SAMPLE(size - 32, stripes, 0);
#undef EXTMEM_SAMPLE
  scramble(acc, prime);
  // The four accumulators folded into one, each step a scramble, then its lanes.
  for (int a = 1; a < 4; ++a) {
    acc[0] = _mm256_xor_si256(acc[0], acc[a]);
    const __m256i x = _mm256_xor_si256(acc[0], _mm256_srli_epi64(acc[0], 47));
    acc[0] = _mm256_add_epi64(_mm256_mul_epu32(x, prime),
                              _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), prime), 32));
  }
  sample_constant = _mm256_testz_si256(diff, diff) != 0;
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[0]);
  return fold_lanes(lanes, 0x2545f4914f6cdd1dull ^ size);
}
#endif

// Blocks at least this large are grouped by a sample first (sampled_hash_avx2).
constexpr std::size_t kSampledBlock = 1024;
// Told apart from sample keys (a match would only cost a compare).
constexpr std::uint64_t kWholeKeyTag = 0x5bd1e9955bd1e995ull;

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
    // One buffer per thread, kept from piece to piece: a fresh one per piece
    // was fresh pages, each entered by a fault on its first read (perf).
    thread_local std::unique_ptr<std::uint8_t[]> buffer;
    thread_local std::size_t buffer_size = 0;
    if (buffer_size < step) {
      buffer.reset(new std::uint8_t[step]);
      buffer_size = step;
    }
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

// The largest sums S (EntropySums units; -1: none) whose fixed-point entropy
// bits(S) places a block as the exact entropy would: bits(S) falls as S
// grows, so each test holds up to a limit, found by bisection.
struct SumLimits {
  std::int64_t known;  // S exact (EntropySums' `exact`): bits(S) + 1e-12 >= threshold, the exact test
  std::int64_t sure;   // bits(S) >= threshold + kEntropyError: the exact value reaches it too
  std::int64_t maybe;  // bits(S) + 1e-12 >= threshold - kEntropyError: it may; beyond, it does not
};
SumLimits sum_limits(const EntropySums& fast, double threshold) {
  auto limit = [&](auto holds) {
    std::int64_t lo = -1, hi = std::int64_t{1} << 50;  // holds(lo) (or none), !holds(hi): sums stay below 2^48
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (holds(fast.bits(static_cast<std::uint64_t>(mid))) ? lo : hi) = mid;
    }
    return lo;
  };
  return {limit([&](double b) { return b + 1e-12 >= threshold; }),
          limit([&](double b) { return b >= threshold + kEntropyError; }),
          limit([&](double b) { return b + 1e-12 >= threshold - kEntropyError; })};
}

// Which of `batch` blocks (at most kBatch) reach the threshold, a bit each in
// member[], decided on their sums without a branch per block: a sum no
// greater than limits.known where it is exact (known[k] != 0), else no greater
// than limits.sure; unsure[]: those the fixed point cannot place (not exact,
// above limits.sure, no greater than limits.maybe), which need their exact value.
void decide(const std::uint64_t* sums, const std::uint8_t* known, std::size_t batch, const SumLimits& limits,
            std::uint64_t* member, std::uint64_t* unsure) {
  for (std::size_t w = 0; w * 64 < batch; ++w) {
    std::uint64_t m = 0, u = 0;
    for (std::size_t j = 0; j < 64 && w * 64 + j < batch; ++j) {
      const auto sum = static_cast<std::int64_t>(sums[w * 64 + j]);
      const bool exact = known[w * 64 + j] != 0;
      m |= static_cast<std::uint64_t>(sum <= (exact ? limits.known : limits.sure)) << j;
      u |= static_cast<std::uint64_t>(!exact && sum > limits.sure && sum <= limits.maybe) << j;
    }
    member[w] = m;
    unsure[w] = u;
  }
}

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32(), which its
// own -Wmaybe-uninitialized then reports (as in entropy_kernel.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// decide() eight blocks a step (perf: the loop above was a sixth of the
// whole --entropy time). sums and known hold kBatch entries, so the last
// step may read past `batch`: those bits are masked off.
__attribute__((target("avx512f,avx512bw"))) void decide_avx512(const std::uint64_t* sums, const std::uint8_t* known,
                                                              std::size_t batch, const SumLimits& limits,
                                                              std::uint64_t* member, std::uint64_t* unsure) {
  const __m512i known_limit = _mm512_set1_epi64(limits.known), sure = _mm512_set1_epi64(limits.sure),
                maybe = _mm512_set1_epi64(limits.maybe);
  for (std::size_t w = 0; w * 64 < batch; ++w) {
    std::uint64_t m = 0, u = 0;
    for (std::size_t j = 0; j < 64 && w * 64 + j < batch; j += 8) {
      const std::size_t at = w * 64 + j;
      const std::size_t n = std::min<std::size_t>(8, batch - at);
      const auto valid = static_cast<__mmask8>((1u << n) - 1);
      const __m512i s = _mm512_loadu_si512(sums + at);
      const __m512i k = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(known + at)));
      const __mmask8 exact = _mm512_test_epi64_mask(k, k);
      const __m512i limit = _mm512_mask_blend_epi64(exact, sure, known_limit);
      const __mmask8 in = _mm512_cmple_epi64_mask(s, limit) & valid;
      const __mmask8 un = _mm512_cmpgt_epi64_mask(s, sure) & _mm512_cmple_epi64_mask(s, maybe) &
                          static_cast<__mmask8>(~exact) & valid;
      m |= static_cast<std::uint64_t>(in) << j;
      u |= static_cast<std::uint64_t>(un) << j;
    }
    member[w] = m;
    unsure[w] = u;
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

// The run lists, handed back after delivery and used again: on noise a
// piece holds some 80000 runs, and a fresh list grew through new pages,
// whose faults and copies measured more than the search (perf).
class SpareRunLists {
 public:
  std::vector<EntropyRun> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lists_.empty()) return {};
    std::vector<EntropyRun> runs = std::move(lists_.back());
    lists_.pop_back();
    return runs;
  }
  void give(std::vector<EntropyRun>&& runs) {
    runs.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    lists_.push_back(std::move(runs));
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<EntropyRun>> lists_;
};

// 3 x kEntropyError in sums (2^32 units per bit, per byte of the block:
// EntropySums), rounded up, with room for the rounding of the doubles.
std::uint64_t near_sum_units(std::size_t block) {
  return static_cast<std::uint64_t>(std::ceil((3 * kEntropyError + 1e-12) * 4294967296.0 * static_cast<double>(block))) +
         1;
}

// Which blocks of a batch reach the threshold, a bit each in `member`,
// decided on the sums (limits.*: what each sum must not exceed) without a
// branch per block; those the fixed point cannot place (within kEntropyError
// of the threshold) get their exact value (exact_h, marked in `computed`).
template <class ExactAt>
[[gnu::always_inline]] inline void decide_batch(const std::uint64_t* sums, const std::uint8_t* known,
                                                std::size_t batch, const SumLimits& limits, double bits,
                                                detail::ScanIsa isa, const ExactAt& exact_at, double* exact_h,
                                                std::uint64_t* member, std::uint64_t* unsure,
                                                std::uint64_t* computed) {
#if defined(__x86_64__)
  if (isa == detail::ScanIsa::avx512) decide_avx512(sums, known, batch, limits, member, unsure);
  else
#endif
    decide(sums, known, batch, limits, member, unsure);
  for (std::size_t w = 0; w * 64 < batch; ++w) {
    for (std::uint64_t u = unsure[w]; u != 0; u &= u - 1) {
      const std::size_t k = w * 64 + static_cast<std::size_t>(__builtin_ctzll(u));
      exact_h[k] = exact_at(k);
      computed[w] |= std::uint64_t{1} << (k & 63);
      if (exact_h[k] + 1e-12 >= bits) member[w] |= std::uint64_t{1} << (k & 63);
    }
  }
}

// Each run of member blocks of a batch (its first block at base + first
// blocks), appended to `runs` or joined to the last run where it continues
// it, with its lowest and highest exact entropy. Only blocks whose fixed-point
// value is within 3 x kEntropyError of the run's lowest (or highest) can hold
// it, so only those need their exact value (`value(k)`): the same answer as
// the exact value of every block.
template <class Value>
[[gnu::always_inline]] inline void append_batch_runs(const std::uint64_t* sums, const std::uint64_t* member,
                                                     std::size_t batch, std::uint64_t near, std::size_t base,
                                                     std::size_t first, std::size_t block, const Value& value,
                                                     std::vector<EntropyRun>& runs) {
  auto bit = [](const std::uint64_t* words, std::size_t k) { return (words[k / 64] >> (k % 64)) & 1; };
  std::size_t k = 0;
  while (true) {
    // The next member block, and the end of its run.
    while (k < batch && (member[k / 64] >> (k % 64)) == 0) k = (k / 64 + 1) * 64;
    if (k >= batch) break;
    k += static_cast<std::size_t>(__builtin_ctzll(member[k / 64] >> (k % 64)));
    std::size_t end = k;
    while (end < batch && bit(member, end) != 0) {
      const std::uint64_t ones = ~(member[end / 64] >> (end % 64));
      end += ones == 0 ? 64 - end % 64 : static_cast<std::size_t>(__builtin_ctzll(ones));
    }
    end = std::min(end, batch);
    std::uint64_t low_sum = sums[k], high_sum = sums[k];
    for (std::size_t j = k + 1; j < end; ++j) {
      low_sum = std::min(low_sum, sums[j]);
      high_sum = std::max(high_sum, sums[j]);
    }
    // A low sum is a high entropy. Candidates: the blocks whose sum is
    // within `near` units of the lowest or the highest (more than
    // within 3 x kEntropyError of the run's extremes, in integers).
    double min_bits = 0, max_bits = 0;
    bool first_value = true;
    for (std::size_t j = k; j < end; ++j) {
      if (sums[j] - low_sum > near && high_sum - sums[j] > near) continue;
      const double h = value(j);
      min_bits = first_value ? h : std::min(min_bits, h);
      max_bits = first_value ? h : std::max(max_bits, h);
      first_value = false;
    }
    const std::size_t at = base + (first + k) * block;
    if (!runs.empty() && runs.back().offset + runs.back().bytes == at) {
      EntropyRun& run = runs.back();
      run.bytes += (end - k) * block;
      run.min_bits = std::min(run.min_bits, min_bits);
      run.max_bits = std::max(run.max_bits, max_bits);
    } else {
      runs.push_back({at, (end - k) * block, min_bits, max_bits});
    }
    k = end;
  }
}

// Hands a piece's runs to `sink` in order, joining the first to `open` (the
// last run of the pieces before) where it continues it; the piece's last run
// stays open, as it may continue into the next piece. False when `sink` stops.
bool deliver_entropy_runs(std::vector<EntropyRun>& runs, std::optional<EntropyRun>& open, const EntropySink& sink) {
  for (EntropyRun& r : runs) {
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
}

template <class Spans>
BlockScanStats entropy_pieces(std::size_t size, const EntropyQuery& q, const EntropySink& sink, const Spans& spans,
                              const MappingGuard* guard, std::optional<Error>& failed, detail::ScanIsa isa) {
  BlockScanStats stats;
  if (size < q.block) return stats;
  const std::size_t usable = size - size % q.block;
  const EntropySums fast(q.block, isa);
  // A piece is a whole number of blocks, so runs only need joining at piece borders.
  const std::size_t piece = kPiece - kPiece % q.block;
  const std::size_t pieces = (usable + piece - 1) / piece;
  std::optional<EntropyRun> open;  // a run that may continue into the next piece
  struct PieceRuns {
    std::vector<EntropyRun> runs;
    bool faulted = false;  // the mapping faulted by the end of the piece: void
    std::optional<Error> error;
  };
  SpareRunLists spare;
  const SumLimits limits = sum_limits(fast, q.bits);
  const std::uint64_t near = near_sum_units(q.block);
  auto work = [&](std::size_t i) {
    PieceRuns piece_runs;
    piece_runs.runs = spare.take();
    std::vector<EntropyRun>& runs = piece_runs.runs;
    const std::size_t lo = i * piece, hi = std::min(usable, lo + piece);
    detail::ExactEntropy exact_entropy(q.block);
    std::uint64_t sums[kBatch];
    std::uint8_t known[kBatch];  // sums[k] gives the exact value
    double exact_h[kBatch];      // exact values computed to decide membership
    const bool with_counts = fast.has_counts();
    std::unique_ptr<std::uint8_t[]> counts(with_counts ? new std::uint8_t[32 * kBatch] : nullptr);
    piece_runs.error = spans(lo, hi, [&](const std::uint8_t* p, std::size_t base, std::size_t len) {
      const std::size_t blocks = len / q.block;
      for (std::size_t first = 0; first < blocks; first += kBatch) {
        const std::size_t batch = std::min(kBatch, blocks - first);
        const std::uint8_t* bp = p + first * q.block;
        fast.sums(bp, batch, sums, known, counts.get());
        auto exact_at = [&](std::size_t k) {
          return exact_entropy(bp + k * q.block, with_counts ? counts.get() + 32 * k : nullptr);
        };
        std::uint64_t member[kBatch / 64] = {}, unsure[kBatch / 64] = {}, computed[kBatch / 64] = {};
        decide_batch(sums, known, batch, limits, q.bits, isa, exact_at, exact_h, member, unsure, computed);
        // A block's exact entropy: from its sum where that is exact, else
        // computed once (and kept in exact_h).
        auto value = [&](std::size_t k) {
          if (known[k] != 0) return fast.bits(sums[k]);
          if (((computed[k / 64] >> (k % 64)) & 1) == 0) {
            exact_h[k] = exact_at(k);
            computed[k / 64] |= std::uint64_t{1} << (k % 64);
          }
          return exact_h[k];
        };
        append_batch_runs(sums, member, batch, near, base, first, q.block, value, runs);
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
    if (!deliver_entropy_runs(piece_runs.runs, open, sink)) return false;
    spare.give(std::move(piece_runs.runs));
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
  ReferenceBlocks() : id_(instances_.fetch_add(1, std::memory_order_relaxed) + 1) {}

  // The reference for `hash`, or nullopt when `offset` is now it.
  std::optional<std::uint64_t> find_or_add(std::uint64_t hash, std::uint64_t offset) {
    Recent::Slot& slot = recent_slot(hash);
    if (slot.used && slot.hash == hash) return slot.reference;
    Shard& s = shards_[(hash >> 58) % kShards];
    std::optional<std::uint64_t> found;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      auto [it, inserted] = s.map.try_emplace(hash, offset);
      if (!inserted) found = it->second;
    }
    slot = {hash, found.value_or(offset), true};
    return found;
  }

  // Asks for the line find_or_add(hash) reads first, which the reads and
  // compares between two lookups push out of the cache (perf: that load
  // was 44 % of find_or_add).
  void prefetch(std::uint64_t hash) {
#if defined(__x86_64__)
    _mm_prefetch(reinterpret_cast<const char*>(&recent_slot(hash)), _MM_HINT_T0);
#else
    (void)hash;
#endif
  }

 private:
  static constexpr std::size_t kShards = 64;
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::uint64_t, std::uint64_t> map;
  };
  struct Recent {
    static constexpr int kBits = 12;
    struct Slot {
      std::uint64_t hash = 0, reference = 0;
      bool used = false;
    };
    std::uint64_t owner = 0;  // the table whose answers these are (id_)
    Slot slots[std::size_t{1} << kBits];
  };
  // This thread's remembered answer for `hash`, maybe another hash's. Each
  // thread's answers of this table are remembered (a reference never changes
  // once set, so a remembered one stays right): on an image of many twins
  // most lookups end there, without a lock.
  Recent::Slot& recent_slot(std::uint64_t hash) {
    thread_local std::unique_ptr<Recent> recent;
    if (!recent) recent = std::make_unique<Recent>();
    if (recent->owner != id_) {
      recent->owner = id_;
      std::fill(std::begin(recent->slots), std::end(recent->slots), Recent::Slot{});
    }
    return recent->slots[(hash * 0x9e3779b97f4a7c15ull) >> (64 - Recent::kBits)];
  }
  static inline std::atomic<std::uint64_t> instances_{0};
  std::uint64_t id_;
  Shard shards_[kShards];
};

// A block as the hashing of its piece saw it.
struct TwinSeen {
  std::uint64_t hash, offset;
  bool same;  // equal to its hash's reference block
};

// What the hashing of one piece found.
struct TwinPiece {
  std::vector<TwinSeen> seen;  // non-constant blocks, in offset order
  std::uint64_t constant = 0;
  bool faulted = false;        // the mapping faulted by the end of the piece: void
  std::optional<Error> error;
};

using BlockHashFn = std::uint64_t (*)(const std::uint8_t*, std::size_t, bool&);

// Keys and compares every block of [lo, hi) (`spans` gives the bytes) with
// its key's reference block (`at(offset)` gives those bytes); `key_of` keys a
// block, `hash` keys it by all its bytes.
template <class Spans, class At, class KeyOf>
TwinPiece hash_twin_piece(const Spans& spans, std::size_t lo, std::size_t hi, std::size_t block, const KeyOf& key_of,
                          BlockHashFn hash, ReferenceBlocks& references, At at) {
  TwinPiece r;
  r.seen.reserve((hi - lo) / block);
  r.error = spans(lo, hi, [&](const std::uint8_t* p, std::size_t base, std::size_t len) {
    // Each block is compared with its reference one block later, after
    // the next block's hash: the reference's lines, asked for at once when
    // it is found, have arrived by then (a reference is anywhere in the
    // image, so a compare at once waited on memory line by line).
    const std::uint8_t* pending = nullptr;  // a block waiting for its compare
    const std::uint8_t* pending_ref = nullptr;
    bool pending_of_sample = false;  // its key is its sample's
    auto compare_pending = [&] {
      if (pending == nullptr) return;
      TwinSeen& s = r.seen.back();
      s.same = std::memcmp(pending, pending_ref, block) == 0;
      if (!s.same && pending_of_sample) {
        // Unlike the reference of its sample: keyed again by all its bytes
        // (so blocks alike only in their samples, as pages that differ in
        // one counter, do not pile up in one list compared pairwise after
        // the scan), and compared with that key's reference.
        bool constant = false;
        const std::uint64_t whole = hash(pending, block, constant) ^ kWholeKeyTag;
        if (whole != s.hash) {
          s.hash = whole;
          const auto ref = references.find_or_add(whole, s.offset);
          s.same = !ref || std::memcmp(pending, at(*ref), block) == 0;
        }
      }
      pending = nullptr;
    };
    for (std::size_t k = 0; k < len; k += block) {
      bool constant = false, of_sample = false;
      const std::uint64_t h = key_of(p + k, constant, of_sample);
      if (!constant) references.prefetch(h);  // arrives during the compare below
      compare_pending();
      if (constant) {
        ++r.constant;
        continue;
      }
      const auto ref = references.find_or_add(h, base + k);
      r.seen.push_back({h, base + k, true});
      if (ref) {
        pending = p + k;
        pending_ref = at(*ref);
        pending_of_sample = of_sample;
#if defined(__x86_64__)
        for (std::size_t line = 0; line < block && line < kPrefetchBytes; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(pending_ref + line), _MM_HINT_T0);
#endif
      }
    }
    compare_pending();
  });
  return r;
}

// One group per hash while the pieces are delivered; split by content afterwards.
struct HashGroups {
  struct Group {
    std::uint64_t hash;
    std::vector<std::uint64_t> same, other;  // offsets equal to the hash's reference block, and not
  };
  std::vector<Group> groups;
  std::unordered_map<std::uint64_t, std::uint32_t> by_hash;
};

// Adds the blocks of the piece at `lo` to their hash's group and counts them
// in `result`; false when --max (max_distinct) stops the search in the piece.
bool add_twin_piece(const TwinPiece& r, std::size_t lo, const TwinQuery& q, HashGroups& hg, TwinResult& result) {
  for (std::size_t k = 0; k < r.seen.size(); ++k) {
    const TwinSeen& s = r.seen[k];
    auto [it, inserted] = hg.by_hash.try_emplace(s.hash, 0);
    if (inserted) {
      if (q.max_distinct != 0 && hg.groups.size() >= q.max_distinct) {
        hg.by_hash.erase(it);
        // Stopped before this block: the counts are of the blocks before it
        // (the constant ones among them: those before it not in `seen`).
        const std::uint64_t constant_before = (s.offset - lo) / q.block - k;
        result.constant_blocks += constant_before;
        result.blocks += constant_before;
        result.bytes = s.offset;
        result.stopped = true;
        return false;
      }
      it->second = static_cast<std::uint32_t>(hg.groups.size());
      hg.groups.push_back({s.hash, {}, {}});
    }
    HashGroups::Group& g = hg.groups[it->second];
    (s.same ? g.same : g.other).push_back(s.offset);
    ++result.blocks;
  }
  result.constant_blocks += r.constant;
  result.blocks += r.constant;
  return true;
}

// Each hash's blocks by content: those equal to the reference are one; the
// others (a 64-bit collision: in practice none) by comparing them. Offsets
// arrive in increasing order, so each content's first is its lowest. The
// groups of two or more go to `result`, largest first.
template <class At>
void split_twin_groups(std::vector<HashGroups::Group>& groups, std::size_t block, At at, TwinResult& result) {
  for (HashGroups::Group& g : groups) {
    auto add = [&](std::vector<std::uint64_t>&& offsets) {
      ++result.distinct;
      bool constant = false;
      if (offsets.size() >= 2) result.groups.push_back({block_hash(at(offsets.front()), block, constant), std::move(offsets)});
    };
    if (!g.same.empty()) add(std::move(g.same));
    std::vector<std::vector<std::uint64_t>> contents;
    for (std::uint64_t off : g.other) {
      auto match = std::find_if(contents.begin(), contents.end(), [&](const std::vector<std::uint64_t>& c) {
        return std::memcmp(at(c.front()), at(off), block) == 0;
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
}

// `spans` gives the bytes to hash; `at(offset)` the bytes of any block (the
// references, compared with).
template <class Spans, class At>
TwinResult twin_pieces(std::size_t size, const TwinQuery& q, const Spans& spans, At at,
                       const MappingGuard* guard, std::optional<Error>& failed, detail::ScanIsa isa) {
  TwinResult result;
  if (size < q.block) return result;
  const std::size_t usable = size - size % q.block;
  const std::size_t piece = std::max(kPiece, q.block);
  const std::size_t pieces = (usable + piece - 1) / piece;
  ReferenceBlocks references;
  // Blocks are grouped by a hash of this run's choosing (the vector one where
  // the CPU has AVX2); the hash printed is block_hash's, computed per group.
  BlockHashFn hash = block_hash;
  bool sampled = false;  // keys from a sample first, then (for a block unlike its reference) from all of it
#if defined(__x86_64__)
  if (isa >= detail::ScanIsa::avx2) {
    hash = group_hash_avx2;
    sampled = q.block >= kSampledBlock;
  }
#endif
  // The key of the block at p: its hash, or with `sampled` its sample's hash
  // (a block whose sample is constant gets the hash of all of it at once,
  // which also tells whether it is constant). Equal blocks get equal keys.
  // `of_sample`: the key is a sample's.
  auto key_of = [&](const std::uint8_t* p, bool& constant, bool& of_sample) -> std::uint64_t {
    of_sample = false;
#if defined(__x86_64__)
    if (sampled) {
      bool sample_constant = false;
      const std::uint64_t h = sampled_hash_avx2(p, q.block, sample_constant);
      of_sample = !sample_constant;
      if (of_sample) return h;
      return hash(p, q.block, constant) ^ kWholeKeyTag;
    }
#endif
    return hash(p, q.block, constant);
  };
  auto work = [&](std::size_t i) {
    const std::size_t lo = i * piece, hi = std::min(usable, lo + piece);
    TwinPiece r = hash_twin_piece(spans, lo, hi, q.block, key_of, hash, references, at);
    r.faulted = guard != nullptr && guard->faulted();
    return r;
  };
  HashGroups hg;
  hg.by_hash.reserve(usable / q.block / 4 + 16);
  auto deliver = [&](std::size_t i, TwinPiece&& r) {
    if (r.faulted) return false;
    if (r.error) {
      failed = std::move(r.error);
      return false;
    }
    if (!add_twin_piece(r, i * piece, q, hg, result)) return false;
    result.bytes = std::min(usable, (i + 1) * piece);
    return true;
  };
  detail::run_ordered_pieces<TwinPiece>(pieces, helper_threads(), work, deliver);
  if (failed || (guard != nullptr && guard->faulted())) return result;
  split_twin_groups(hg.groups, q.block, at, result);
  return result;
}

}  // namespace

namespace detail {

BlockScanStats scan_entropy_bytes(const std::uint8_t* data, std::size_t size, const EntropyQuery& q,
                                  const EntropySink& sink, const MappingGuard* guard, ScanIsa isa) {
  std::optional<Error> failed;  // memory is not read through calls that fail
  return entropy_pieces(size, q, sink, MemorySpans{data}, guard, failed, isa);
}

TwinResult find_twins_bytes(const std::uint8_t* data, std::size_t size, const TwinQuery& q,
                            const MappingGuard* guard, ScanIsa isa) {
  std::optional<Error> failed;
  return twin_pieces(size, q, MemorySpans{data}, [data](std::uint64_t off) { return data + off; }, guard, failed, isa);
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
                                        nullptr, failed, detail::scan_isa());
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
                                        &guard, failed, detail::scan_isa())
                          : twin_pieces(m.size, q, MemorySpans{data}, at, &guard, failed, detail::scan_isa());
  if (guard.shrank()) return guard.shrank_error();
  if (failed) return std::move(*failed);
  return result;
}

}  // namespace extmem::memtools
