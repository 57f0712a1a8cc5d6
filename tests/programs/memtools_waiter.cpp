// Test program for `extmem poll` / `extmem poke`: maps a 16 KiB MAP_SHARED memfd
// named NAME, fills it with a pattern except the 32-bit wait word at 0x80 (left
// 0), prints the mapping's address ("0x7f..."), then waits until the wait word
// becomes 1 and checks no other byte changed.
//   memtools_waiter NAME [TIMEOUT_SECONDS=20 [vm-clone]]
// With vm-clone it also starts a task with its own pid in its address space
// (clone(CLONE_VM) without CLONE_THREAD, as LeakSanitizer's tracer or a vfork
// child is) that lives until the word is 1, and prints its pid after the address.
// Exit: 0 released with every other byte intact; 1 timed out; 2 other bytes
// changed; 3 setup failed. Its comm is "memtools_waiter" (15 characters).
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

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

// The clone's body. It shares the waiter's TLS and sanitizer state, so it calls
// nothing instrumented and leaves by exit(2) itself, never through the C library.
__attribute__((no_sanitize("address", "undefined"))) int vm_clone_main(void* word) {
  while (__atomic_load_n(static_cast<std::uint32_t*>(word), __ATOMIC_ACQUIRE) != 1) {
    const timespec pause{0, 1000000};
    ::syscall(SYS_nanosleep, &pause, nullptr);
  }
  ::syscall(SYS_exit, 0);
  return 0;
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
  auto* word = reinterpret_cast<std::uint32_t*>(map->data() + kWord);
  pid_t clone_pid = 0;
  if (argc > 3 && std::string_view(argv[3]) == "vm-clone") {
    constexpr std::size_t kStack = 64 * 1024;
    void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) return 3;
    clone_pid = ::clone(vm_clone_main, static_cast<char*>(stack) + kStack, CLONE_VM | SIGCHLD, word);
    if (clone_pid < 0) {
      std::perror("memtools_waiter: clone");
      return 3;
    }
    std::printf("%p %d\n", static_cast<void*>(map->data()), static_cast<int>(clone_pid));
  } else {
    std::printf("%p\n", static_cast<void*>(map->data()));
  }
  std::fflush(stdout);
  // The clone ends when the word is 1; on a timeout it is killed. Either way it is reaped.
  struct Reap {
    pid_t pid;
    ~Reap() {
      if (pid <= 0) return;
      if (__atomic_load_n(word_, __ATOMIC_ACQUIRE) != 1) ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::uint32_t* word_;
  } reap{clone_pid, word};
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
