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

// How one access to a view ended when it did not do its job: the kind, whose
// function it was, the function's error, the message.
struct IoProblem {
  Errc errc;
  Side side;
  Error error;
  std::string message;
};
using IoResult = std::optional<IoProblem>;

// The producer as memory of this process: loads and stores cannot fail.
class MemoryProducer {
 public:
  explicit MemoryProducer(std::span<std::byte> view) noexcept : view_(view) {}
  const void* address() const noexcept { return view_.data(); }
  std::size_t size() const noexcept { return view_.size(); }
  IoResult load(std::size_t offset, std::uint8_t& out) noexcept {
    out = load_byte(view_.data() + offset);
    return std::nullopt;
  }
  IoResult store(std::size_t offset, std::uint8_t value) noexcept {
    store_byte(view_.data() + offset, value);
    return std::nullopt;
  }

 private:
  std::span<std::byte> view_;
};

// One byte through a ReadFn, whichever side it reads: exceptions, errors and
// a wrong count become an IoProblem naming the side.
IoResult read_one(const ReadFn& read_fn, Side side, std::size_t offset, std::uint8_t& out) {
  const char* whose = side == Side::producer ? "the producer's read function" : "the read function";
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
    std::string message = fmt::format("offset {}: {} failed: {}", offset, whose, got->error().message());
    return IoProblem{Errc::read_failed, side, std::move(*got).error(), std::move(message)};
  }
  const std::size_t filled = got->value();
  if (filled != buffer.size()) {
    return IoProblem{Errc::short_read, side, Error{},
                     fmt::format("offset {}: {} reported {} bytes for a {}-byte request", offset, whose, filled,
                                 buffer.size())};
  }
  out = static_cast<std::uint8_t>(buffer[0]);
  return std::nullopt;
}

// The producer through ProducerFns (check_rw): a read or a write may fail.
class FunctionProducer {
 public:
  FunctionProducer(const ProducerFns& fns, std::size_t size) noexcept : fns_(fns), size_(size) {}
  const void* address() const noexcept { return reinterpret_cast<const void*>(fns_.address); }
  std::size_t size() const noexcept { return size_; }
  IoResult load(std::size_t offset, std::uint8_t& out) { return read_one(fns_.read, Side::producer, offset, out); }
  IoResult store(std::size_t offset, std::uint8_t value) {
    const std::array<std::byte, 1> buffer{std::byte{value}};
    std::optional<Status> done;
    try {
      done.emplace(fns_.write(offset, std::span<const std::byte>(buffer)));
    } catch (const std::exception& e) {
      done.emplace(Error{"zerocopy write function", ErrorKind::protocol, "exception", e.what()});
    } catch (...) {
      done.emplace(Error{"zerocopy write function", ErrorKind::protocol, "exception", "a non-standard exception"});
    }
    if (done->ok()) return std::nullopt;
    std::string message = fmt::format("offset {}: the producer's write function failed writing 0x{:02x}: {}", offset,
                                      value, done->error().message());
    return IoProblem{Errc::write_failed, Side::producer, std::move(*done).error(), std::move(message)};
  }

 private:
  const ProducerFns& fns_;
  std::size_t size_;
};

// Puts the producer's original byte back when the probe of one offset ends,
// whichever way it ends (a mismatch, a read error, an exception). restore()
// says whether that worked: through a write function it may not.
template <typename Producer>
class RestoreGuard {
 public:
  RestoreGuard(Producer& producer, std::size_t offset, std::uint8_t original) noexcept
      : producer_(producer), offset_(offset), original_(original) {}
  RestoreGuard(const RestoreGuard&) = delete;
  RestoreGuard& operator=(const RestoreGuard&) = delete;
  ~RestoreGuard() {
    // Only on an exception (bad_alloc) unwinding the probe: the result cannot be reported.
    try {
      (void)restore();
    } catch (...) {
    }
  }

  IoResult restore() {
    if (!std::exchange(armed_, false)) return std::nullopt;
    return producer_.store(offset_, original_);
  }

 private:
  Producer& producer_;
  std::size_t offset_;
  std::uint8_t original_;
  bool armed_ = true;
};

Failure argument_failure(Errc errc, std::string message) {
  Failure f{};
  f.errc = errc;
  f.message = std::move(message);
  return f;
}

Failure io_failure(IoProblem problem, std::size_t offset, std::uint8_t original) {
  Failure f{};
  f.errc = problem.errc;
  f.side = problem.side;
  f.offset = offset;
  f.original = original;
  f.read_error = std::move(problem.error);
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

// Marks a failure whose restore of the original did not succeed.
Failure with_restore_failure(Failure f, const IoProblem& restore, std::uint8_t sentinel) {
  f.restore_failed = true;
  f.sentinel = sentinel;
  f.message += fmt::format("; restoring the original 0x{:02x} failed too ({}): the producer may still hold 0x{:02x} at "
                           "offset {}",
                           f.original, restore.message, sentinel, f.offset);
  return f;
}

// The probe itself, shared by check(), check_fn() and check_rw(). `read` has
// the shape IoResult(std::size_t offset, std::uint8_t& out); the producer is a
// MemoryProducer or a FunctionProducer.
template <typename Producer, typename ReadByte>
Outcome probe(Producer& producer, ReadByte& read, const Options& options) {
  const std::vector<std::size_t> offsets = probe_offsets(producer.address(), producer.size(), options);
  for (const std::size_t offset : offsets) {
    std::uint8_t original = 0;
    if (auto problem = producer.load(offset, original)) return io_failure(std::move(*problem), offset, 0);

    std::uint8_t before = 0;
    if (auto problem = read(offset, before)) return io_failure(std::move(*problem), offset, original);
    const std::uint8_t sentinel = pick_sentinel(options.seed, offset, original, before);

    RestoreGuard<Producer> guard(producer, offset, original);
    // A failure while the sentinel may be in place: put the original back first.
    auto fail = [&](Failure f) -> Outcome {
      if (auto restore = guard.restore()) return with_restore_failure(std::move(f), *restore, sentinel);
      return f;
    };
    // A failed store is restored too: the write may have landed in part.
    if (auto problem = producer.store(offset, sentinel)) return fail(io_failure(std::move(*problem), offset, original));
    std::uint8_t seen = 0;
    if (auto problem = read(offset, seen)) return fail(io_failure(std::move(*problem), offset, original));
    if (seen != sentinel) return fail(not_observed(offset, original, sentinel, seen, false));

    if (auto problem = guard.restore()) {
      Failure f = io_failure(std::move(*problem), offset, original);
      f.restore_failed = true;
      f.sentinel = sentinel;
      f.message += fmt::format(" (restoring the original): the producer may still hold 0x{:02x} at offset {}",
                               sentinel, offset);
      return f;
    }
    if (auto problem = read(offset, seen)) return io_failure(std::move(*problem), offset, original);
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
    case Errc::write_failed: return "write_failed";
    case Errc::invalid_options: return "invalid_options";
  }
  return "unknown";
}

Error to_error(const Failure& failure) {
  if (failure.errc == Errc::read_failed || failure.errc == Errc::write_failed) return failure.read_error;
  ErrorKind kind = ErrorKind::invalid_argument;
  if (failure.errc == Errc::short_read) kind = ErrorKind::protocol;
  if (failure.errc == Errc::not_observed) kind = ErrorKind::mismatch;
  return Error{"zerocopy check", kind, to_string(failure.errc), failure.message};
}

std::string options_problem(const Options& options) {
  if (options.random_offsets > kMaxRandomOffsets)
    return fmt::format("random_offsets {} is beyond the maximum {}", options.random_offsets, kMaxRandomOffsets);
  if (options.boundary_pages > kMaxBoundaryPages)
    return fmt::format("boundary_pages {} is beyond the maximum {}", options.boundary_pages, kMaxBoundaryPages);
  return {};
}

std::vector<std::size_t> probe_offsets(const void* base, std::size_t size, const Options& options) {
  std::vector<std::size_t> out;
  if (size == 0 || !options_problem(options).empty()) return out;
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

namespace {
// invalid_options for `fn` when options_problem() says so; checked before anything is read or written.
std::optional<Failure> options_failure(const char* fn, const Options& options) {
  std::string problem = options_problem(options);
  if (problem.empty()) return std::nullopt;
  return argument_failure(Errc::invalid_options, fmt::format("zerocopy {}: {}", fn, problem));
}
}  // namespace

Outcome check(std::span<std::byte> producer, std::span<const std::byte> consumer, const Options& options) {
  if (auto f = options_failure("check", options)) return *f;
  if (producer.empty()) return argument_failure(Errc::empty_producer, "zerocopy check: the producer view is empty");
  if (consumer.size() < producer.size()) {
    return argument_failure(Errc::consumer_too_short,
                            fmt::format("zerocopy check: the consumer view has {} bytes, fewer than the "
                                        "producer's {}",
                                        consumer.size(), producer.size()));
  }
  auto read = [consumer](std::size_t offset, std::uint8_t& out) -> IoResult {
    out = load_byte(consumer.data() + offset);
    return std::nullopt;
  };
  MemoryProducer memory(producer);
  return probe(memory, read, options);
}

Outcome check_fn(std::span<std::byte> producer, const ReadFn& read_fn, const Options& options) {
  if (auto f = options_failure("check_fn", options)) return *f;
  if (producer.empty()) {
    return argument_failure(Errc::empty_producer, "zerocopy check_fn: the producer view is empty");
  }
  if (!read_fn) {
    Failure f = argument_failure(Errc::read_failed, "zerocopy check_fn: no read function was given");
    f.side = Side::consumer;
    f.read_error = Error{"zerocopy check_fn", ErrorKind::invalid_argument, "", "no read function was given"};
    return f;
  }
  auto read = [&read_fn](std::size_t offset, std::uint8_t& out) {
    return read_one(read_fn, Side::consumer, offset, out);
  };
  MemoryProducer memory(producer);
  return probe(memory, read, options);
}

Outcome check_rw(std::size_t size, const ProducerFns& producer, const ReadFn& consumer, const Options& options) {
  if (auto f = options_failure("check_rw", options)) return *f;
  if (size == 0) return argument_failure(Errc::empty_producer, "zerocopy check_rw: the producer view is empty");
  const bool no_consumer = !consumer;
  if (no_consumer || !producer.read) {
    Failure f = argument_failure(Errc::read_failed, no_consumer ? "zerocopy check_rw: no consumer read function"
                                                                : "zerocopy check_rw: no producer read function");
    f.side = no_consumer ? Side::consumer : Side::producer;
    f.read_error = Error{"zerocopy check_rw", ErrorKind::invalid_argument, "", f.message};
    return f;
  }
  if (!producer.write) {
    Failure f = argument_failure(Errc::write_failed, "zerocopy check_rw: no producer write function");
    f.side = Side::producer;
    f.read_error = Error{"zerocopy check_rw", ErrorKind::invalid_argument, "", f.message};
    return f;
  }
  auto read = [&consumer](std::size_t offset, std::uint8_t& out) {
    return read_one(consumer, Side::consumer, offset, out);
  };
  FunctionProducer functions(producer, size);
  return probe(functions, read, options);
}

}  // namespace extmem::zerocopy
