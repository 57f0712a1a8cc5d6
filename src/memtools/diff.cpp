#include "extmem/memtools/diff.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "extmem/memtools/processes.h"
#include "extmem/memtools/word_access.h"
#include "extmem/os/fd.h"
#include "memtools/mapping_guard.h"
#include "memtools/image_file.h"

namespace extmem::memtools {
namespace {

constexpr std::uint64_t kPage = 4096;           // the grouping unit of the output
constexpr std::size_t kReadChunk = 4 << 20;     // bytes of a region per piece of the first snapshot (and of a file's compare)
// Bytes per piece when a process is read again to compare: the reading lands
// in a per-thread buffer this size, small enough to stay in the core's L2
// cache until memcmp reads it (4 MiB went out to memory and back).
constexpr std::size_t kCompareChunk = 256 << 10;
constexpr unsigned kThreads = 4;                // readers at most (the calling thread is one)

#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14 uapi value, for older headers
#endif

std::uint64_t load(const std::uint8_t* p, unsigned width) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, width);  // this machine's byte order, as peek shows words
  return v;
}

}  // namespace

// Named, not anonymous: Snapshot::State (external linkage) holds Mappings, and a
// member of internal-linkage type is an ODR hazard GCC reports (-Wsubobject-linkage)
// once this file is part of a unity unit.
namespace diff_detail {

// An anonymous or file mapping, unmapped on destruction.
struct Mapping {
  void* addr = MAP_FAILED;
  std::size_t size = 0;
  Mapping() = default;
  Mapping(Mapping&& o) noexcept : addr(std::exchange(o.addr, MAP_FAILED)), size(o.size) {}
  Mapping& operator=(Mapping&& o) noexcept {
    std::swap(addr, o.addr);
    std::swap(size, o.size);
    return *this;
  }
  ~Mapping() {
    if (addr != MAP_FAILED) ::munmap(addr, size);
  }
  std::uint8_t* bytes() const { return static_cast<std::uint8_t*>(addr); }
};

}  // namespace diff_detail

namespace {

using diff_detail::Mapping;

Error select_error(std::string detail) {
  return Error{"select ranges", ErrorKind::invalid_argument, {}, std::move(detail)};
}

}  // namespace

std::uint64_t diff_words(const std::uint8_t* old_bytes, const std::uint8_t* new_bytes, std::size_t size,
                         std::uint64_t base, unsigned width, std::size_t region, std::size_t max_words_per_page,
                         std::vector<PageChanges>& pages) {
  std::uint64_t total = 0;
  for (std::size_t at = 0; at < size;) {
    // One page of the address space at a time: memcmp finds the (usual) unchanged page at memory speed.
    const std::uint64_t page = (base + at) & ~(kPage - 1);
    const std::size_t span = static_cast<std::size_t>(std::min<std::uint64_t>(page + kPage - (base + at), size - at));
    if (std::memcmp(old_bytes + at, new_bytes + at, span) != 0) {
      PageChanges pc{page, region, 0, {}};
      for (std::size_t w = at; w + width <= at + span; w += width) {
        const std::uint64_t a = load(old_bytes + w, width), b = load(new_bytes + w, width);
        if (a == b) continue;
        ++pc.changed;
        if (pc.words.size() < max_words_per_page) pc.words.push_back({base + w, a, b});
      }
      total += pc.changed;
      if (pc.changed > 0) pages.push_back(std::move(pc));
    }
    at += span;
  }
  return total;
}

struct Snapshot::State {
  DiffSource source;
  std::vector<DiffRegion> regions;
  std::vector<std::size_t> offsets;  // where each region's bytes start in `baseline`
  std::vector<std::string> skipped;
  std::uint64_t bytes = 0;
  Mapping baseline;                  // anonymous, `bytes` long
  os::UniqueFd fd;                   // /proc/PID/mem or the file
  Mapping file;                      // file mode: the whole file, read-only
  std::optional<detail::MappingGuard> file_guard;  // of `file` (declared after it: goes first)

  // False once process_vm_readv was refused (EPERM: a stricter check than
  // opening /proc/PID/mem passed; ENOSYS: a seccomp filter): every later read
  // goes through /proc/PID/mem.
  mutable std::atomic<bool> direct{true};

  // Reads [address, address + size) of the process into `to`. Returns the
  // errno of a failed read (0: complete; -1: short read at the end of a
  // mapping). process_vm_readv copies once, from the target's pages into
  // ours; a read of /proc/PID/mem copies each page twice (into a kernel
  // buffer, then to us) and looks pages up one at a time (perf: 31 % of its
  // time in that extra copy). Neither stops the target.
  int read_process(std::uint64_t address, std::size_t size, std::uint8_t* to) const {
    std::size_t got = 0;
    while (got < size && direct.load(std::memory_order_relaxed)) {
      const iovec local{to + got, size - got};
      const iovec remote{reinterpret_cast<void*>(address + got), size - got};
      const ssize_t r = ::process_vm_readv(source.pid, &local, 1, &remote, 1, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EPERM || errno == ENOSYS)) {
        direct.store(false, std::memory_order_relaxed);
        break;
      }
      if (r < 0) return errno == EFAULT ? EIO : errno;  // EIO: what /proc/PID/mem says of an unmapped address
      if (r == 0) return -1;
      got += static_cast<std::size_t>(r);
    }
    while (got < size) {
      const ssize_t r = ::pread(fd.get(), to + got, size - got, static_cast<off_t>(address + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return errno;
      if (r == 0) return -1;
      got += static_cast<std::size_t>(r);
    }
    return 0;
  }

  std::string process_name() const { return fmt::format("/proc/{}/mem", source.pid); }

  Status select_process() {
    auto maps = read_live_maps(source.pid);
    if (!maps) return std::move(maps).error();
    const std::string name = process_name();
    const int raw = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (raw < 0) return os_error("open " + name, errno);
    fd = os::UniqueFd(raw);
    for (const os::MapEntry& m : *maps) {
      if (m.perms.empty() || m.perms[0] != 'r') continue;
      if (source.match && !source.match->matches(m)) continue;
      // A mapping the kernel will not read through /proc/PID/mem ([vvar], some
      // device mappings) is left out now rather than failing every round.
      std::uint8_t probe[8];
      const int e = read_process(m.start, std::min<std::uint64_t>(sizeof probe, m.size()), probe);
      if (e != 0) {
        if (!process_running(source.pid))
          return os_error("pread " + name, ESRCH, "the process ended while its mappings were listed");
        skipped.push_back(fmt::format("{}: {}", format_mapping(m), e > 0 ? errno_code(e) : "short read"));
        continue;
      }
      regions.push_back({m.start, m.size() - m.size() % source.width, 0, m});
    }
    if (regions.empty())
      return select_error(source.match ? "no readable mapping matches --match" : "the process has no readable mapping");
    return {};
  }

  Status select_file() {
    auto image = detail::open_image(source.file);
    if (!image) return std::move(image).error();
    fd = std::move(image->fd);
    const std::uint64_t size = image->size;
    const unsigned w = source.width;
    auto add = [&](std::uint64_t address, std::uint64_t offset, std::uint64_t bytes) -> Status {
      if (offset > size || bytes > size - offset)
        return word_error("select ranges", ErrorKind::invalid_argument, WordCode::past_end,
                          fmt::format("{:#x}+{:#x} lies past the end of {} ({} bytes; file offset {:#x})", address, bytes,
                                      source.file, size, offset));
      regions.push_back({address, bytes - bytes % w, offset, std::nullopt});
      return {};
    };
    if (source.ranges.empty()) {
      if (source.ram_map) {
        for (const RamRange& r : source.ram_map->ranges())
          if (auto st2 = add(r.gpa, r.file_offset, r.size); !st2) return st2;
      } else if (size >= w) {
        regions.push_back({0, size - size % w, 0, std::nullopt});
      }
    }
    for (const auto& [address, bytes] : source.ranges) {
      if (address % w != 0 || bytes % w != 0)
        return select_error(fmt::format("range {:#x}:{:#x} is not aligned to the word width ({} bytes)", address, bytes, w));
      std::uint64_t offset = address;
      if (source.ram_map) {
        const auto first = source.ram_map->to_file_offset(address);
        const auto last = source.ram_map->to_file_offset(address + bytes - 1);
        if (!first || !last || *last - *first != bytes - 1)
          return select_error(fmt::format("range {:#x}:{:#x} does not lie in one range of --ram-map", address, bytes));
        offset = *first;
      }
      if (auto st2 = add(address, offset, bytes); !st2) return st2;
    }
    if (regions.empty() || std::all_of(regions.begin(), regions.end(), [](const DiffRegion& r) { return r.size == 0; }))
      return select_error("nothing to compare: the ranges hold no whole word");
    if (size > 0) {
      file.size = static_cast<std::size_t>(size);
      file.addr = ::mmap(nullptr, file.size, PROT_READ, MAP_SHARED, fd.get(), 0);
      if (file.addr == MAP_FAILED) return os_error("mmap " + source.file, errno);
      file_guard.emplace(file.addr, file.size, fd.get(), source.file);  // a file that shrinks: an error, not SIGBUS
    }
    return {};
  }

  Status allocate() {
    for (const DiffRegion& r : regions) {
      offsets.push_back(static_cast<std::size_t>(bytes));
      bytes += r.size;
    }
    if (bytes > source.max_bytes)
      return select_error(fmt::format("{} bytes selected, more than --max-bytes={} ({} regions; narrow --match or "
                                      "--range, or raise --max-bytes)",
                                      bytes, source.max_bytes, regions.size()));
    baseline.size = static_cast<std::size_t>(std::max<std::uint64_t>(bytes, 1));
    baseline.addr = ::mmap(nullptr, baseline.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
    if (baseline.addr == MAP_FAILED) return os_error("mmap baseline", errno);
    // No MADV_HUGEPAGE: on this kind of VM the first 2 MiB pages of a run cost
    // 2.4 s per GiB to fault in against 0.4 s for 4 KiB pages (bench/diff_rate.sh).
    return {};
  }

  // Every region cut into `chunk`-byte pieces: the unit the threads share.
  struct Piece {
    std::size_t region;
    std::uint64_t at, size;  // bytes from the region's start
  };
  std::vector<Piece> pieces(std::size_t chunk = kReadChunk) const {
    std::vector<Piece> out;
    for (std::size_t i = 0; i < regions.size(); ++i)
      for (std::uint64_t at = 0; at < regions[i].size; at += chunk)
        out.push_back({i, at, std::min<std::uint64_t>(chunk, regions[i].size - at)});
    return out;
  }

  // Runs job(piece, thread index) over `list` on up to kThreads threads (the
  // caller is one); each thread takes the next piece in turn. /proc/PID/mem
  // reads are kernel copies that scale with cores, as do the faults that fill
  // the baseline the first time.
  template <class Job>
  void for_pieces(const std::vector<Piece>& list, Job job) const {
    const unsigned threads = static_cast<unsigned>(
        std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, std::min<std::size_t>(kThreads, list.size())));
    std::atomic<std::size_t> next{0};
    auto run = [&](unsigned t) {
      for (std::size_t k; (k = next.fetch_add(1)) < list.size();) job(list[k], t);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) {
      try {
        pool.emplace_back(run, t);
      } catch (const std::system_error&) {
        break;  // fewer threads: the caller takes what is left
      }
    }
    run(0);
    for (std::thread& t : pool) t.join();
  }

  // Gives the baseline's pages back on every reader thread before the
  // mapping goes: freeing 1 GiB of 4 KiB pages in one munmap (or at exit)
  // is serial work, 0.09-0.2 s on the 2-core VM. MADV_DONTNEED frees a
  // range under the shared mmap lock, so the threads free theirs at once.
  ~State() {
    if (baseline.addr == MAP_FAILED || baseline.size < kReadChunk * 4) return;
    std::vector<Piece> list;
    for (std::size_t at = 0; at < baseline.size; at += kReadChunk)
      list.push_back({0, at, std::min<std::uint64_t>(kReadChunk, baseline.size - at)});
    for_pieces(list, [&](const Piece& p, unsigned) {
      (void)::madvise(baseline.bytes() + p.at, static_cast<std::size_t>(p.size), MADV_DONTNEED);
    });
  }

  Status first_reading() {
    const std::vector<Piece> list = pieces();
    std::atomic<bool> ended{false};
    for_pieces(list, [&](const Piece& p, unsigned) {
      const DiffRegion& r = regions[p.region];
      std::uint8_t* to = baseline.bytes() + offsets[p.region] + p.at;
      // Entering the piece's fresh pages in one call costs less than a fault
      // per page inside the kernel's copy (bench/diff_rate.sh; Linux 5.14+,
      // otherwise the copy faults them in as before).
      // Rounded out to whole pages: a page shared with the next piece is
      // entered once, and populating a present page changes nothing.
      const auto first = reinterpret_cast<std::uintptr_t>(to) & ~static_cast<std::uintptr_t>(kPage - 1);
      (void)::madvise(reinterpret_cast<void*>(first),
                      static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(to) + p.size - first), kMadvPopulateWrite);
      if (!source.file.empty()) {
        std::memcpy(to, file.bytes() + r.file_offset + p.at, static_cast<std::size_t>(p.size));
      } else if (read_process(r.address + p.at, static_cast<std::size_t>(p.size), to) != 0) {
        // The mapping went away between listing and reading (compare() will say
        // so), or the process ended.
        std::memset(to, 0, static_cast<std::size_t>(p.size));
        if (!process_running(source.pid)) ended = true;
      }
    });
    if (ended) return os_error("pread " + process_name(), ESRCH, "the process ended during the first snapshot");
    if (file_guard && file_guard->shrank()) return file_guard->shrank_error();
    return {};
  }
};

Snapshot::Snapshot(std::unique_ptr<State> state) : state_(std::move(state)) {}
Snapshot::Snapshot(Snapshot&&) noexcept = default;
Snapshot& Snapshot::operator=(Snapshot&&) noexcept = default;
Snapshot::~Snapshot() = default;

const std::vector<DiffRegion>& Snapshot::regions() const noexcept { return state_->regions; }
const std::vector<std::string>& Snapshot::skipped() const noexcept { return state_->skipped; }
std::uint64_t Snapshot::bytes() const noexcept { return state_->bytes; }
unsigned Snapshot::width() const noexcept { return state_->source.width; }

Result<Snapshot> Snapshot::take(const DiffSource& source) {
  if (!valid_width(source.width))
    return Error{"select ranges", ErrorKind::invalid_argument, {}, fmt::format("width {} is not 1, 2, 4 or 8", source.width)};
  auto s = std::make_unique<State>();
  s->source = source;
  if (auto st = source.file.empty() ? s->select_process() : s->select_file(); !st) return std::move(st).error();
  if (auto st = s->allocate(); !st) return std::move(st).error();
  if (auto st = s->first_reading(); !st) return std::move(st).error();
  return Snapshot(std::move(s));
}

Result<DiffResult> Snapshot::compare(std::size_t max_words_per_page) {
  State& s = *state_;
  const unsigned w = s.source.width;
  const std::vector<State::Piece> list = s.pieces(s.source.file.empty() ? kCompareChunk : kReadChunk);
  // Per thread: its own scratch buffer and findings, merged at the end.
  struct Found {
    std::vector<std::uint8_t> scratch;
    std::vector<PageChanges> pages;
    std::uint64_t changed = 0, bytes = 0;
    std::vector<std::pair<std::size_t, std::string>> vanished;  // region, why
  };
  std::vector<Found> found(kThreads);
  std::atomic<bool> ended{false};
  s.for_pieces(list, [&](const State::Piece& p, unsigned t) {
    Found& f = found[t];
    const DiffRegion& r = s.regions[p.region];
    std::uint8_t* old_bytes = s.baseline.bytes() + s.offsets[p.region] + p.at;
    const std::size_t n = static_cast<std::size_t>(p.size);
    const std::uint8_t* now = nullptr;
    if (!s.source.file.empty()) {
      now = s.file.bytes() + r.file_offset + p.at;
    } else {
      if (f.scratch.empty()) f.scratch.resize(kCompareChunk);
      if (const int e = s.read_process(r.address + p.at, n, f.scratch.data()); e != 0) {
        if (!process_running(s.source.pid)) {
          ended = true;
        } else {
          f.vanished.emplace_back(p.region, fmt::format("{}: {} at {:#x}", format_mapping(*r.mapping),
                                                        e > 0 ? errno_code(e) : "short read", r.address + p.at));
        }
        return;
      }
      now = f.scratch.data();
    }
    const std::size_t before = f.pages.size();
    const std::uint64_t changed =
        diff_words(old_bytes, now, n, r.address + p.at, w, p.region, max_words_per_page, f.pages);
    // The new reading becomes the baseline: only the pages that changed need copying.
    for (std::size_t k = before; k < f.pages.size(); ++k) {
      const std::uint64_t base = r.address + p.at;
      const std::uint64_t from = std::max(f.pages[k].page, base) - base;
      const std::uint64_t to = std::min(f.pages[k].page + kPage, base + p.size) - base;
      std::memcpy(old_bytes + from, now + from, static_cast<std::size_t>(to - from));
    }
    f.changed += changed;
    f.bytes += p.size;
  });
  if (ended) return os_error("pread " + s.process_name(), ESRCH, "the process ended during the snapshot");
  if (s.file_guard && s.file_guard->shrank()) return s.file_guard->shrank_error();
  DiffResult result;
  std::vector<std::pair<std::size_t, std::string>> vanished;
  for (Found& f : found) {
    result.changed_words += f.changed;
    result.bytes += f.bytes;
    result.pages.insert(result.pages.end(), std::make_move_iterator(f.pages.begin()),
                        std::make_move_iterator(f.pages.end()));
    vanished.insert(vanished.end(), f.vanished.begin(), f.vanished.end());
  }
  // One line per region that could not be read again: its first unreadable piece.
  std::sort(vanished.begin(), vanished.end());
  for (std::size_t k = 0; k < vanished.size(); ++k)
    if (k == 0 || vanished[k].first != vanished[k - 1].first) result.vanished.push_back(std::move(vanished[k].second));
  std::sort(result.pages.begin(), result.pages.end(), [](const PageChanges& a, const PageChanges& b) {
    if (a.changed != b.changed) return a.changed > b.changed;
    if (a.region != b.region) return a.region < b.region;
    return a.page < b.page;
  });
  return result;
}

}  // namespace extmem::memtools
