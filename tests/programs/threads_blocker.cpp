// Test program for `extmem threads`: threads that sit in known system calls.
//   threads_blocker REQUEST [EXTRA_THREADS=0] [SPINNERS=0]
// Threads (each named with pthread_setname_np):
//   ioctl-wait   ioctl(fd of /dev/null, REQUEST, 0): a seccomp user-notification
//                filter holds exactly this call at syscall entry and nobody
//                answers, so the thread stays inside ioctl with its arguments
//                intact (no driver needed, any request number)
//   futex-wait   futex(&word, FUTEX_WAIT_PRIVATE, 0, NULL) on a word never changed
//   poll-wait    poll() on the read end of a pipe nobody writes, no timeout
//   sleeper-N    EXTRA_THREADS threads in nanosleep(1 s) loops (for the 50-thread benchmark)
//   spinner-N    SPINNERS threads that never block (a process whose CPU time always moves)
// Prints "ready PID IOCTL_TID FUTEX_TID POLL_TID" (IOCTL_TID 0 and a line
// "seccomp unavailable: ..." when the filter could not be installed), then the
// main thread waits in pause() until killed.
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<pid_t> g_ioctl_tid{0}, g_futex_tid{0}, g_poll_tid{0};
std::atomic<int> g_started{0};
int g_null = -1;
unsigned long g_request = 0;
std::uint32_t g_futex_word = 0;
int g_pipe[2] = {-1, -1};

#if defined(__x86_64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
constexpr std::uint32_t kArch = 0;
#endif

// Returns the listener fd, or -1 with errno set.
int hold_ioctl(std::uint32_t request) {
  if (kArch == 0) {
    errno = ENOSYS;
    return -1;
  }
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 0, 5),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
      // The low word of args[1] (little-endian): the request as the kernel compares it.
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args) + sizeof(std::uint64_t)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, request, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
}

void named(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: threads_blocker REQUEST [EXTRA_THREADS]\n");
    return 2;
  }
  g_request = std::strtoul(argv[1], nullptr, 0);
  const int extra = argc > 2 ? std::atoi(argv[2]) : 0;
  const int spinners = argc > 3 ? std::atoi(argv[3]) : 0;
  g_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (g_null < 0 || ::pipe2(g_pipe, O_CLOEXEC) != 0) {
    std::perror("threads_blocker: setup");
    return 3;
  }
  const int listener = hold_ioctl(static_cast<std::uint32_t>(g_request));
  if (listener < 0) std::printf("seccomp unavailable: %s\n", std::strerror(errno));
  std::vector<std::thread> threads;
  if (listener >= 0)
    threads.emplace_back([] {
      named("ioctl-wait");
      g_ioctl_tid = static_cast<pid_t>(::syscall(SYS_gettid));
      ++g_started;
      ::ioctl(g_null, g_request, 0);
    });
  threads.emplace_back([] {
    named("futex-wait");
    g_futex_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    ++g_started;
    while (true) ::syscall(SYS_futex, &g_futex_word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  });
  threads.emplace_back([] {
    named("poll-wait");
    g_poll_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    ++g_started;
    pollfd p{g_pipe[0], POLLIN, 0};
    while (true) ::poll(&p, 1, -1);
  });
  for (int i = 0; i < extra; ++i)
    threads.emplace_back([i] {
      named(("sleeper-" + std::to_string(i)).c_str());
      ++g_started;
      while (true) {
        const timespec one{1, 0};
        ::nanosleep(&one, nullptr);
      }
    });
  for (int i = 0; i < spinners; ++i)
    threads.emplace_back([i] {
      named(("spinner-" + std::to_string(i)).c_str());
      ++g_started;
      // A volatile store in a statement of its own: the value of an assignment to a
      // volatile (the for-increment's) is deprecated in C++20 (GCC 14 -Wvolatile).
      volatile unsigned long n = 0;
      for (;;) {
        const unsigned long next = n + 1;
        n = next;
      }
    });
  while (g_started.load() < static_cast<int>(threads.size())) {
    const timespec ms{0, 1000000};
    ::nanosleep(&ms, nullptr);
  }
  std::printf("ready %d %d %d %d\n", static_cast<int>(::getpid()), static_cast<int>(g_ioctl_tid.load()),
              static_cast<int>(g_futex_tid.load()), static_cast<int>(g_poll_tid.load()));
  std::fflush(stdout);
  while (true) ::pause();
}
