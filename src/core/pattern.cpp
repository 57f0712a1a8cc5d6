#include "extmem/core/pattern.h"

#include <cstring>
#include <vector>

namespace extmem::pattern {
namespace {

// splitmix64: cheap, well mixed, and stateless per word so slices are independent.
std::uint64_t word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::byte byte_at(std::uint64_t seed, std::size_t i) {
  return static_cast<std::byte>(word(seed, i / 8) >> ((i % 8) * 8));
}

}  // namespace

void fill(std::span<std::byte> out, std::uint64_t seed) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = byte_at(seed, i);
}

std::optional<std::size_t> first_mismatch(std::span<const std::byte> got, std::uint64_t seed) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != byte_at(seed, i)) return i;
  return std::nullopt;
}

std::size_t count_stale_words(std::span<const std::byte> got, std::uint64_t seed) {
  std::size_t stale = 0;
  for (std::size_t w = 0; w + 4 <= got.size(); w += 4) {
    for (std::size_t i = w; i < w + 4; ++i) {
      if (got[i] != byte_at(seed, i)) {
        ++stale;
        break;
      }
    }
  }
  return stale;
}

std::optional<std::size_t> find(std::span<const std::byte> haystack, std::uint64_t seed, std::size_t length) {
  if (length > 4096) length = 4096;
  if (length == 0 || haystack.size() < length) return std::nullopt;
  std::vector<std::byte> needle(length);
  fill(needle, seed);
  const void* hit = ::memmem(haystack.data(), haystack.size(), needle.data(), needle.size());
  if (hit == nullptr) return std::nullopt;
  return static_cast<std::size_t>(static_cast<const std::byte*>(hit) - haystack.data());
}

}  // namespace extmem::pattern
