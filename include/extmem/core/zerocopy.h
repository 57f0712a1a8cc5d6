// extmem::zerocopy — is a claimed zero-copy handoff really shared memory?
//
// A fast copy takes as long as an alias, so timing cannot tell them apart. The
// only evidence is behavioural: write a byte through one view (the producer)
// and observe it through the other (the consumer). This header is that probe.
//
// What a check does, per probed offset (all offsets and sizes are in bytes,
// counted from the first byte of the views):
//   1. read the producer's byte there (the "original") and the consumer's byte;
//   2. write a sentinel through the producer that differs from both;
//   3. the consumer must now show the sentinel;
//   4. write the original back through the producer;
//   5. the consumer must now show the original again.
// Step 5 catches a consumer that took a lazy snapshot after the first write,
// and the pair of steps means a consumer that never changes cannot pass by
// coincidence. Producer accesses are volatile and separated by sequentially
// consistent fences, so neither the compiler nor the CPU elides or reorders
// them. The offsets (see probe_offsets) are a fixed, small set, so a 1 GiB
// view costs about what a 4 KiB one does.
//
// What it proves: visibility, not mechanism. A read function that copies the
// producer's bytes afresh on every call is indistinguishable from an alias.
// Across a real device or process boundary that is impossible, and that is
// where check_fn is meant to run.
//
// Thread safety: a check writes into the producer's memory while it runs (one
// byte at a time, restored before the next offset). It is not safe while any
// other thread, process or device writes to that memory, nor while anyone
// relies on reading stable contents there. Distinct checks on disjoint memory
// may run concurrently.
//
// Post-condition, on every return path (pass, every failure, and a read
// function that fails or throws mid-way): each producer byte holds the value it
// had when the call began. The one exception is check_rw() when the producer's
// own write function fails while putting the original back: that failure is
// reported (Failure::restore_failed) with the offset and the original byte.
// No exceptions cross this API except std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::zerocopy {

/// Why a check did not pass.
enum class Errc {
  empty_producer,      ///< the producer view has zero bytes; nothing can be probed
  consumer_too_short,  ///< check(): the consumer view is shorter than the producer view
  short_read,          ///< check_fn(): the read function filled fewer bytes than asked (or claimed more)
  read_failed,         ///< check_fn(): the read function returned an Error (carried unchanged) or threw
  not_observed,        ///< a write through the producer was not seen through the consumer: it is not an alias
  write_failed,        ///< check_rw(): the producer's write function returned an Error (carried unchanged) or threw
  invalid_options,     ///< Options::random_offsets or boundary_pages beyond its maximum; nothing is read or written
};

/// Which view's function failed, for short_read / read_failed (check_rw() has
/// functions on both sides; check_fn() only on the consumer's).
enum class Side {
  none,      ///< no function failed (pass, not_observed, argument errors)
  consumer,  ///< the consumer's read function
  producer,  ///< the producer's read or write function (check_rw() only)
};

/// Stable lower-case name of an Errc: "empty_producer", "consumer_too_short",
/// "short_read", "read_failed", "not_observed", "write_failed", "invalid_options".
const char* to_string(Errc errc) noexcept;

/// Page size (bytes) whose boundaries are probed near both ends of the views.
inline constexpr std::size_t kPageSize = 4096;

/// The largest Options::random_offsets a check accepts (a count of offsets):
/// beyond it a check is invalid_options, not an allocation of that many offsets.
inline constexpr std::size_t kMaxRandomOffsets = std::size_t{1} << 20;
/// The largest Options::boundary_pages a check accepts (pages at each end).
inline constexpr std::size_t kMaxBoundaryPages = std::size_t{1} << 16;

struct Options {
  /// Seed of the pseudo-random offsets and sentinels; the same seed and size
  /// give the same offsets and sentinels (reproducible failures).
  std::uint64_t seed = 0x6578746d656d;  // "extmem"
  /// Number of pseudo-random offsets probed in addition to the fixed ones
  /// (duplicates are dropped, so fewer may remain on a small view); at most kMaxRandomOffsets.
  std::size_t random_offsets = 8;
  /// How many page boundaries (kPageSize apart, counted from the producer's
  /// address) are probed at each end of the views; both the byte before and
  /// the byte at each boundary are probed; at most kMaxBoundaryPages.
  std::size_t boundary_pages = 2;
};

/// What a passing check did.
struct Pass {
  std::size_t offsets_probed;  ///< distinct offsets whose sentinel and restore were both observed
};

/// Why a check did not pass, with the evidence.
struct Failure {
  Errc errc;
  /// not_observed: the lowest probed offset (bytes from the start of the views)
  /// whose write was not seen. short_read / read_failed: the offset being
  /// read when that happened. 0 for empty_producer and consumer_too_short.
  std::size_t offset = 0;
  /// not_observed: the byte last written through the producer at `offset` —
  /// the sentinel, or the original when restore_missed is set.
  std::uint8_t written = 0;
  /// not_observed: the byte the consumer showed instead of `written`.
  std::uint8_t seen = 0;
  /// not_observed / short_read / read_failed: the producer's byte at `offset`
  /// before the check (it is there again on return).
  std::uint8_t original = 0;
  /// not_observed: the sentinel written at `offset` (equals `written` unless
  /// restore_missed).
  std::uint8_t sentinel = 0;
  /// not_observed: the sentinel was seen, but the restore of the original
  /// was not — the consumer holds a stale (lazily taken) snapshot.
  bool restore_missed = false;
  /// read_failed / write_failed: the failing function's error, unchanged
  /// (for write_failed the producer's write function's). Otherwise default.
  Error read_error;
  /// short_read / read_failed / write_failed: whose function failed.
  Side side = Side::none;
  /// check_rw() only: putting the original byte back at `offset` through the
  /// producer's write function failed too (after the failure this Failure
  /// reports, or as the failure itself when errc is write_failed), so the
  /// producer may still hold `sentinel` there; write `original` back yourself.
  /// The message says so. Always false for check() and check_fn().
  bool restore_failed = false;
  /// Human text. For not_observed it names offset and bytes and says
  /// "consumer holds a copy or stale snapshot".
  std::string message;
};

/// Pass, or Failure with the evidence. Use passed()/failure() or std::visit.
using Outcome = std::variant<Pass, Failure>;

/// True when the outcome is a Pass.
inline bool passed(const Outcome& outcome) noexcept { return std::holds_alternative<Pass>(outcome); }
/// The Failure, or nullptr when the outcome is a Pass.
inline const Failure* failure(const Outcome& outcome) noexcept { return std::get_if<Failure>(&outcome); }

/// The failure as a project Error, for propagating through Result<T>:
/// step "zerocopy check", code = to_string(errc), detail = message. Kinds:
/// empty_producer / consumer_too_short -> invalid_argument; short_read ->
/// protocol; not_observed -> mismatch; read_failed / write_failed -> the
/// failing function's error itself, returned unchanged.
Error to_error(const Failure& failure);

/// Reads the consumer's current bytes at [offset, offset + out.size()) of the
/// view (offset in bytes from its start, the same numbering as the producer),
/// after whatever synchronisation the consumer needs (a GPU copy and fence, a
/// request to another process). Returns the number of bytes written to `out`;
/// fewer than out.size() is reported as short_read. An Error is reported as
/// read_failed and carried unchanged. Called at least twice per probed offset
/// (in practice three times: before the write, after it, after the restore),
/// always with a small `out` (1 byte today), so it must be repeatable and its
/// cost should not depend on the size of the view. `out` is owned by the
/// caller and valid only during the call.
using ReadFn = std::function<Result<std::size_t>(std::size_t offset, std::span<std::byte> out)>;

/// The offsets (bytes from the start of a producer view at `base` with `size`
/// bytes) a check probes, ascending and distinct: 0 and size - 1; for each of
/// the first and last `boundary_pages` kPageSize-aligned addresses strictly
/// inside the view (offset > 0), the byte before and the byte at it; size / 2; and
/// `options.random_offsets` offsets from a generator seeded by options.seed.
/// At most 3 + 4 * boundary_pages + random_offsets of them, whatever the size.
/// Empty when size is 0, or when options_problem(options) is set (nothing allocated).
std::vector<std::size_t> probe_offsets(const void* base, std::size_t size, const Options& options = {});

/// Why `options` cannot be used ("random_offsets 1000000000 is beyond the
/// maximum 1048576"), or empty when each field is within its maximum.
std::string options_problem(const Options& options);

/// Checks that `consumer` aliases `producer` in this address space: offset i
/// of one is the same byte as offset i of the other. Both views are borrowed
/// for the call only; the consumer is read with volatile loads, so it may be
/// device or shared memory.
/// Errors: invalid_options (options_problem(); nothing is read or written),
/// empty_producer (producer.size() == 0), consumer_too_short
/// (consumer.size() < producer.size(); nothing is written), not_observed.
/// A consumer longer than the producer is fine; its extra bytes are not read.
Outcome check(std::span<std::byte> producer, std::span<const std::byte> consumer, const Options& options = {});

/// Checks that the consumer reached through `read` aliases `producer`, for
/// consumers that must be synchronised or re-read after each write (a GPU
/// buffer, a mapping in another process). `read` is borrowed for the call.
/// Errors: invalid_options (nothing is read), empty_producer (nothing is read), read_failed (read returned an
/// Error — carried unchanged in Failure::read_error — or threw, or `read` is
/// empty), short_read, not_observed.
Outcome check_fn(std::span<std::byte> producer, const ReadFn& read, const Options& options = {});

/// Writes `in` (in.size() bytes, borrowed for the call) into the producer at
/// [offset, offset + in.size()) of the view (bytes from its start), and
/// returns once the producer's own memory holds them: whatever the write needs
/// to complete (a device copy and a synchronisation) happens before it
/// returns. An Error is reported as write_failed and carried unchanged.
/// Called twice per probed offset (the sentinel, then the original), with one
/// byte today.
using WriteFn = std::function<Status(std::size_t offset, std::span<const std::byte> in)>;

/// A producer this process cannot address with loads and stores (a GPU
/// buffer, memory behind an interpreter), reached through two functions.
struct ProducerFns {
  /// The producer's current bytes at [offset, offset + out.size()), the
  /// contract of ReadFn; called once per probed offset, for the original.
  ReadFn read;
  /// Writes through the producer, see WriteFn.
  WriteFn write;
  /// Address of the producer's first byte in whatever address space holds it
  /// (a device pointer, for instance), only to place the page boundaries that
  /// probe_offsets() probes; 0 when unknown (boundaries every kPageSize bytes
  /// from offset 0).
  std::uintptr_t address = 0;
};

/// check_fn() for a producer reached through functions: the same method,
/// offsets (probe_offsets(address, size)) and sentinels; `producer` and
/// `consumer` are borrowed for the call. `size` is the view's length in bytes.
/// Errors: invalid_options (options_problem(); nothing is read or written);
/// empty_producer (size == 0; nothing is read or written);
/// read_failed / short_read from either read function, with Failure::side
/// saying whose (an empty function is read_failed); write_failed (the
/// producer's write function failed or threw, or is empty); not_observed.
/// Every byte written is put back through producer.write however the probe of
/// an offset ends — including a failing write, which is retried as the
/// restore — and a restore that fails is reported in restore_failed.
Outcome check_rw(std::size_t size, const ProducerFns& producer, const ReadFn& consumer, const Options& options = {});

}  // namespace extmem::zerocopy
