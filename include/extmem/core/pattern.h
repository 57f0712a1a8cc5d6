// Seeded byte patterns: each writer gets its own, so no writer can mask another
// and a constant cannot match by accident (docs/probe.md, "Regions and payloads").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace extmem::pattern {

/// Fills `out` with the pattern of `seed`. Byte i depends on (seed, i) only, so
/// any slice can be regenerated and compared on its own.
void fill(std::span<std::byte> out, std::uint64_t seed);

/// Offset of the first byte of `got` that differs from the pattern of `seed`; nullopt when all match.
std::optional<std::size_t> first_mismatch(std::span<const std::byte> got, std::uint64_t seed);

/// Number of 32-bit words of `got` (size rounded down to 4 bytes) that differ
/// from the pattern of `seed`: the stale-word count of a coherency soak.
std::size_t count_stale_words(std::span<const std::byte> got, std::uint64_t seed);

/// Offset in `haystack` where the first `length` bytes of the pattern of `seed`
/// start, or nullopt. Used to report `payloadAt=` when a mapping shows the
/// payload at a shifted offset. `length` is capped at 4096 bytes.
std::optional<std::size_t> find(std::span<const std::byte> haystack, std::uint64_t seed, std::size_t length);

}  // namespace extmem::pattern
