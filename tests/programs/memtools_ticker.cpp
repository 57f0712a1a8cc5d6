// A target for `extmem diff`: maps a shared memfd named "extmem-ticker", 16 KiB
// (or MIB mebibytes, for bench/diff_rate.sh), whose pages hold fixed bytes, and
// changes one 4-byte word of it, at offset 0x1080 (page 1, offset 0x80), every
// 50 ms by adding 1. Prints on stdout, as one line, the mapping's address and the word's:
//   {"start": "0x7f...", "word": "0x7f...1080"}
// then ticks until killed, or for SECONDS (default 60) at most, so a lost
// test leaves nothing behind.
//
//   memtools_ticker [MIB [SECONDS]]
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

int main(int argc, char** argv) {
  const std::size_t kSize = argc > 1 ? static_cast<std::size_t>(std::atol(argv[1])) << 20 : 16384;
  if (kSize < 8192) {
    std::fprintf(stderr, "usage: memtools_ticker [MIB [SECONDS]]   (MIB >= 1)\n");
    return 2;
  }
  const int fd = ::memfd_create("extmem-ticker", 0);
  if (fd < 0 || ::ftruncate(fd, kSize) != 0) {
    std::perror("memtools_ticker: memfd");
    return 1;
  }
  void* p = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    std::perror("memtools_ticker: mmap");
    return 1;
  }
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < kSize; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
  auto* word = reinterpret_cast<volatile std::uint32_t*>(bytes + 0x1080);
  *word = 0x10;
  std::printf("{\"start\": \"%p\", \"word\": \"%p\"}\n", p, static_cast<void*>(bytes + 0x1080));
  std::fflush(stdout);
  const timespec tick{0, 50 * 1000 * 1000};
  const long seconds = argc > 2 ? std::atol(argv[2]) : 60;
  for (long i = 0; i < seconds * 20; ++i) {
    ::nanosleep(&tick, nullptr);
    *word = *word + 1;
  }
  return 0;
}
