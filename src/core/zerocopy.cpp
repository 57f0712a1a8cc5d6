#include "extmem/core/zerocopy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace extmem::zerocopy {
namespace {

// SplitMix64: small, well mixed and reproducible across platforms, which is
// all the offsets and sentinels need.
std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void full_fence() noexcept { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Every access to probed memory is a single volatile byte access between two
// full fences: the compiler may neither drop nor merge it, and the CPU orders
// it against the read function's own accesses.
std::uint8_t load_byte(const std::byte* at) noexcept {
  full_fence();
  const std::uint8_t value = *reinterpret_cast<const volatile std::uint8_t*>(at);
  full_fence();
  return value;
}

void store_byte(std::byte* at, std::uint8_t value) noexcept {
  full_fence();
  *reinterpret_cast<volatile std::uint8_t*>(at) = value;
  full_fence();
}

// A byte that differs from both the producer's original and what the
// consumer showed before the write, so the sentinel step alone cannot pass by
// coincidence. Derived from the seed and offset, so failures reproduce.
std::uint8_t pick_sentinel(std::uint64_t seed, std::size_t offset, std::uint8_t original,
                           std::uint8_t consumer_before) noexcept {
  std::uint64_t state = seed ^ (static_cast<std::uint64_t>(offset) * 0xd6e8feb86659fd93ULL);
  auto candidate = static_cast<std::uint8_t>(splitmix64(state));
  while (candidate == original || candidate == consumer_before) ++candidate;
  return candidate;
}

// Puts the producer's original byte back when the probe of one offset ends,
// whichever way it ends (a mismatch, a read error, an exception).
class RestoreGuard {
 public:
  RestoreGuard(std::byte* at, std::uint8_t original) noexcept : at_(at), original_(original) {}
  RestoreGuard(const RestoreGuard&) = delete;
  RestoreGuard& operator=(const RestoreGuard&) = delete;
  ~RestoreGuard() { restore(); }

  void restore() noexcept {
    if (std::exchange(armed_, false)) store_byte(at_, original_);
  }

 private:
  std::byte* at_;
  std::uint8_t original_;
  bool armed_ = true;
};

// How a read of one consumer byte ended when it did not produce the byte.
struct ReadProblem {
  Errc errc;
  Error read_error;
  std::string message;
};

Failure argument_failure(Errc errc, std::string message) {
  Failure f{};
  f.errc = errc;
  f.message = std::move(message);
  return f;
}

Failure read_failure(ReadProblem problem, std::size_t offset, std::uint8_t original) {
  Failure f{};
  f.errc = problem.errc;
  f.offset = offset;
  f.original = original;
  f.read_error = std::move(problem.read_error);
  f.message = std::move(problem.message);
  return f;
}

Failure not_observed(std::size_t offset, std::uint8_t original, std::uint8_t sentinel, std::uint8_t seen,
                     bool restore_missed) {
  Failure f{};
  f.errc = Errc::not_observed;
  f.offset = offset;
  f.original = original;
  f.sentinel = sentinel;
  f.restore_missed = restore_missed;
  f.written = restore_missed ? original : sentinel;
  f.seen = seen;
  if (restore_missed) {
    f.message = fmt::format(
        "offset {}: the sentinel 0x{:02x} was observed but the restore of the original 0x{:02x} was not "
        "(consumer shows 0x{:02x}): consumer holds a copy or stale snapshot",
        offset, sentinel, original, seen);
  } else {
    f.message = fmt::format(
        "offset {}: wrote 0x{:02x} through the producer, consumer shows 0x{:02x} (original 0x{:02x}): "
        "consumer holds a copy or stale snapshot",
        offset, sentinel, seen, original);
  }
  return f;
}

// The probe itself, shared by check() and check_fn(). `read` has the shape
// std::optional<ReadProblem>(std::size_t offset, std::uint8_t& out).
template <typename ReadByte>
Outcome probe(std::span<std::byte> producer, ReadByte& read, const Options& options) {
  const std::vector<std::size_t> offsets = probe_offsets(producer.data(), producer.size(), options);
  for (const std::size_t offset : offsets) {
    std::byte* const at = producer.data() + offset;
    const std::uint8_t original = load_byte(at);

    std::uint8_t before = 0;
    if (auto problem = read(offset, before)) return read_failure(std::move(*problem), offset, original);
    const std::uint8_t sentinel = pick_sentinel(options.seed, offset, original, before);

    RestoreGuard guard(at, original);
    store_byte(at, sentinel);
    std::uint8_t seen = 0;
    if (auto problem = read(offset, seen)) return read_failure(std::move(*problem), offset, original);
    if (seen != sentinel) return not_observed(offset, original, sentinel, seen, false);

    guard.restore();
    if (auto problem = read(offset, seen)) return read_failure(std::move(*problem), offset, original);
    if (seen != original) return not_observed(offset, original, sentinel, seen, true);
  }
  return Pass{offsets.size()};
}

}  // namespace

const char* to_string(Errc errc) noexcept {
  switch (errc) {
    case Errc::empty_producer: return "empty_producer";
    case Errc::consumer_too_short: return "consumer_too_short";
    case Errc::short_read: return "short_read";
    case Errc::read_failed: return "read_failed";
    case Errc::not_observed: return "not_observed";
  }
  return "unknown";
}

Error to_error(const Failure& failure) {
  if (failure.errc == Errc::read_failed) return failure.read_error;
  ErrorKind kind = ErrorKind::invalid_argument;
  if (failure.errc == Errc::short_read) kind = ErrorKind::protocol;
  if (failure.errc == Errc::not_observed) kind = ErrorKind::mismatch;
  return Error{"zerocopy check", kind, to_string(failure.errc), failure.message};
}

std::vector<std::size_t> probe_offsets(const void* base, std::size_t size, const Options& options) {
  std::vector<std::size_t> out;
  if (size == 0) return out;
  out.reserve(3 + 4 * options.boundary_pages + options.random_offsets);
  out.push_back(0);
  out.push_back(size - 1);
  out.push_back(size / 2);

  // Page boundaries are those of the producer's addresses: that is where a
  // mapping can switch from one backing page to another.
  const auto addr = reinterpret_cast<std::uintptr_t>(base);
  const std::size_t first = kPageSize - static_cast<std::size_t>(addr % kPageSize);  // in (0, kPageSize]
  for (std::size_t k = 0; k < options.boundary_pages; ++k) {
    const std::size_t b = first + k * kPageSize;
    if (b >= size) break;
    out.push_back(b - 1);
    out.push_back(b);
  }
  const std::uintptr_t last_addr = (addr + size - 1) & ~static_cast<std::uintptr_t>(kPageSize - 1);
  if (last_addr > addr) {
    std::size_t b = static_cast<std::size_t>(last_addr - addr);
    for (std::size_t k = 0; k < options.boundary_pages && b > 0; ++k, b = b > kPageSize ? b - kPageSize : 0) {
      out.push_back(b - 1);
      out.push_back(b);
    }
  }

  std::uint64_t state = options.seed;
  for (std::size_t i = 0; i < options.random_offsets; ++i) {
    out.push_back(static_cast<std::size_t>(splitmix64(state) % size));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Outcome check(std::span<std::byte> producer, std::span<const std::byte> consumer, const Options& options) {
  if (producer.empty()) return argument_failure(Errc::empty_producer, "zerocopy check: the producer view is empty");
  if (consumer.size() < producer.size()) {
    return argument_failure(Errc::consumer_too_short,
                            fmt::format("zerocopy check: the consumer view has {} bytes, fewer than the "
                                        "producer's {}",
                                        consumer.size(), producer.size()));
  }
  auto read = [consumer](std::size_t offset, std::uint8_t& out) -> std::optional<ReadProblem> {
    out = load_byte(consumer.data() + offset);
    return std::nullopt;
  };
  return probe(producer, read, options);
}

Outcome check_fn(std::span<std::byte> producer, const ReadFn& read_fn, const Options& options) {
  if (producer.empty()) {
    return argument_failure(Errc::empty_producer, "zerocopy check_fn: the producer view is empty");
  }
  if (!read_fn) {
    Failure f = argument_failure(Errc::read_failed, "zerocopy check_fn: no read function was given");
    f.read_error = Error{"zerocopy check_fn", ErrorKind::invalid_argument, "", "no read function was given"};
    return f;
  }
  auto read = [&read_fn](std::size_t offset, std::uint8_t& out) -> std::optional<ReadProblem> {
    std::array<std::byte, 1> buffer{};
    std::optional<Result<std::size_t>> got;
    try {
      got.emplace(read_fn(offset, std::span<std::byte>(buffer)));
    } catch (const std::exception& e) {
      got.emplace(Error{"zerocopy read function", ErrorKind::protocol, "exception", e.what()});
    } catch (...) {
      got.emplace(Error{"zerocopy read function", ErrorKind::protocol, "exception", "a non-standard exception"});
    }
    if (!got->ok()) {
      std::string message = fmt::format("offset {}: the read function failed: {}", offset, got->error().message());
      return ReadProblem{Errc::read_failed, std::move(*got).error(), std::move(message)};
    }
    const std::size_t filled = got->value();
    if (filled != buffer.size()) {
      return ReadProblem{Errc::short_read, Error{},
                         fmt::format("offset {}: the read function reported {} bytes for a {}-byte request", offset,
                                     filled, buffer.size())};
    }
    out = static_cast<std::uint8_t>(buffer[0]);
    return std::nullopt;
  };
  return probe(producer, read, options);
}

}  // namespace extmem::zerocopy
