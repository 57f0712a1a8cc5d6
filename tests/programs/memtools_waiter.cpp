// Test program for `extmem poll` / `extmem poke`: maps a 16 KiB MAP_SHARED memfd
// named NAME, fills it with a pattern except the 32-bit wait word at 0x80 (left
// 0), prints the mapping's address ("0x7f..."), then waits until the wait word
// becomes 1 and checks no other byte changed.
//   memtools_waiter NAME [TIMEOUT_SECONDS=20]
// Exit: 0 released with every other byte intact; 1 timed out; 2 other bytes
// changed; 3 setup failed. Its comm is "memtools_waiter" (15 characters).
#include <sys/mman.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "extmem/os/fd.h"

namespace {

constexpr std::size_t kSize = 16384;
constexpr std::size_t kWord = 0x80;

// FNV-1a over every byte except the wait word.
std::uint64_t checksum_outside_word(const volatile unsigned char* p) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < kSize; ++i) {
    if (i >= kWord && i < kWord + 4) continue;
    h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

double now_s() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memtools_waiter NAME [TIMEOUT_SECONDS]\n");
    return 3;
  }
  const double timeout = argc > 2 ? std::atof(argv[2]) : 20.0;
  auto fd = extmem::os::create_memfd(argv[1], kSize);
  if (!fd) {
    std::fprintf(stderr, "memtools_waiter: %s\n", fd.error().message().c_str());
    return 3;
  }
  auto map = extmem::os::Mapping::map(fd->get(), kSize, MAP_SHARED);
  if (!map) {
    std::fprintf(stderr, "memtools_waiter: %s\n", map.error().message().c_str());
    return 3;
  }
  auto* bytes = reinterpret_cast<volatile unsigned char*>(map->data());
  // The memfd starts zeroed: the wait word is never written here, so a poller
  // that is quicker than this fill still sees its write.
  for (std::size_t i = 0; i < kSize; ++i)
    if (i < kWord || i >= kWord + 4) bytes[i] = static_cast<unsigned char>((i * 131 + 7) & 0xff);
  const std::uint64_t before = checksum_outside_word(bytes);
  std::printf("%p\n", static_cast<void*>(map->data()));
  std::fflush(stdout);

  auto* word = reinterpret_cast<std::uint32_t*>(map->data() + kWord);
  const double deadline = now_s() + timeout;
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != 1) {
    if (now_s() > deadline) {
      std::fprintf(stderr, "memtools_waiter: timed out, word at 0x80 is %#x\n", __atomic_load_n(word, __ATOMIC_ACQUIRE));
      return 1;
    }
    const timespec pause{0, 1000000};  // 1 ms
    ::nanosleep(&pause, nullptr);
  }
  if (checksum_outside_word(bytes) != before) {
    std::fprintf(stderr, "memtools_waiter: bytes outside the wait word changed\n");
    return 2;
  }
  std::printf("released\n");
  return 0;
}
