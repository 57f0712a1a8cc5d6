// Test program for `extmem watch`: grows at a known rate. Every INTERVAL ms it
// creates one 4 KiB memfd, maps it MAP_SHARED and writes to it, so each step
// adds exactly one mapping and 4 KiB of RSS (RssShmem); the fd is closed
// (the mapping keeps the memfd), so the fd count stays flat. Steps follow an
// absolute schedule (step i at start + i * INTERVAL), so a late wake-up
// catches up and the average rate stays exact on a loaded machine.
//
//   watch_grower [--interval-ms=20] [--count=100] [--hold-ms=0] [--exit-code=0]
//                [--name=watch-grower] [--child-count=N] [--child-name=NAME]
//                [--die-with-parent] [--release-file=PATH]
//
// --child-count=N first starts one copy of itself (no further child) that maps
// N memfds named --child-name (default NAME-child) at the same interval; the
// parent waits for it before exiting with --exit-code after --hold-ms.
// --release-file=PATH: after its maps and --hold-ms, each process waits until
// PATH exists (at most 20 s), so a test can keep both alive until it has seen
// their last census, however late a loaded machine samples them.
// --die-with-parent: PR_SET_PDEATHSIG(SIGKILL), so a test that kills the
// watch (our parent) leaves nothing running.
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

long number(const char* arg, const char* prefix) { return std::strtol(arg + std::strlen(prefix), nullptr, 10); }

void sleep_until(const timespec& t) {
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) != 0) {
  }
}

timespec plus_ms(timespec t, long ms) {
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec += 1;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  long interval = 20, count = 100, hold = 0, exit_code = 0, child_count = -1;
  bool die_with_parent = false;
  std::string name = "watch-grower", child_name, release_file;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strncmp(a, "--interval-ms=", 14)) interval = number(a, "--interval-ms=");
    else if (!std::strncmp(a, "--count=", 8)) count = number(a, "--count=");
    else if (!std::strncmp(a, "--hold-ms=", 10)) hold = number(a, "--hold-ms=");
    else if (!std::strncmp(a, "--exit-code=", 12)) exit_code = number(a, "--exit-code=");
    else if (!std::strncmp(a, "--child-count=", 14)) child_count = number(a, "--child-count=");
    else if (!std::strncmp(a, "--name=", 7)) name = a + 7;
    else if (!std::strncmp(a, "--child-name=", 13)) child_name = a + 13;
    else if (!std::strcmp(a, "--die-with-parent")) die_with_parent = true;
    else if (!std::strncmp(a, "--release-file=", 15)) release_file = a + 15;
    else {
      std::fprintf(stderr, "watch_grower: unknown argument %s\n", a);
      return 2;
    }
  }
  if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (child_name.empty()) child_name = name + "-child";

  pid_t child = -1;
  if (child_count >= 0) {
    std::vector<std::string> args = {argv[0], "--interval-ms=" + std::to_string(interval),
                                     "--count=" + std::to_string(child_count), "--name=" + child_name};
    if (die_with_parent) args.push_back("--die-with-parent");
    if (!release_file.empty()) args.push_back("--release-file=" + release_file);
    std::vector<char*> cargs;
    for (auto& s : args) cargs.push_back(s.data());
    cargs.push_back(nullptr);
    // Started by its real path, so the child's comm is "watch_grower" too (not "exe").
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
      std::perror("watch_grower: readlink /proc/self/exe");
      return 3;
    }
    self[n] = '\0';
    if (posix_spawn(&child, self, nullptr, nullptr, cargs.data(), environ) != 0) {
      std::perror("watch_grower: posix_spawn");
      return 3;
    }
  }

  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 1; i <= count; ++i) {
    sleep_until(plus_ms(start, i * interval));
    const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 4096) != 0) {
      std::perror("watch_grower: memfd_create/ftruncate");
      return 3;
    }
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      std::perror("watch_grower: mmap");
      return 3;
    }
    close(fd);
    static_cast<volatile char*>(p)[0] = static_cast<char>(i);  // touch: the page becomes resident
  }
  if (hold > 0) sleep_until(plus_ms(plus_ms(start, count * interval), hold));
  if (!release_file.empty()) {
    struct stat st {};
    for (int polls = 0; polls < 4000 && stat(release_file.c_str(), &st) != 0; ++polls) usleep(5000);
  }
  if (child > 0) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
    }
  }
  // _exit, not return: the suite builds this fixture with its sanitizers, and
  // LeakSanitizer's scan at exit (an atexit handler, on whatever ASAN_OPTIONS the
  // test runner sets) grew the grower's RSS from 7152 to 16340 KiB inside the
  // last sample, which the slope tests then read as growth (950 KiB/s where 200
  // are grown). The grower is a fixture, not code under test.
  std::fflush(nullptr);
  _exit(static_cast<int>(exit_code));
}
