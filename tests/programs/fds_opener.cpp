// Test and benchmark program for `extmem fds`: a reader that opens a file,
// reads 299 bytes, keeps it open for a while and closes it, on a fixed schedule.
//   fds_opener FILE PERIOD_US HOLD_US COUNT
// Keeps FILE.persist open throughout (created if missing). Open k starts at
// k * PERIOD_US after the first (absolute schedule, so the period does not
// drift), the file stays open HOLD_US (nanosleep), then is closed. Prints
// "opens N" when done, then exits 0; exit 3 when a file cannot be opened.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

void add_us(timespec& t, long long us) {
  const long long ns = t.tv_nsec + us * 1000;
  t.tv_sec += ns / 1000000000;
  t.tv_nsec = ns % 1000000000;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: fds_opener FILE PERIOD_US HOLD_US COUNT\n");
    return 2;
  }
  const std::string file = argv[1];
  const long long period = std::atoll(argv[2]), hold = std::atoll(argv[3]);
  const long count = std::atol(argv[4]);
  const int persist = ::open((file + ".persist").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (persist < 0) {
    std::perror("fds_opener: open FILE.persist");
    return 3;
  }
  timespec next{};
  ::clock_gettime(CLOCK_MONOTONIC, &next);
  long opens = 0;
  for (long k = 0; k < count; ++k) {
    ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::perror("fds_opener: open FILE");
      return 3;
    }
    ++opens;
    char buf[299];
    if (::read(fd, buf, sizeof buf) < 0) std::perror("fds_opener: read");
    timespec until = next;
    add_us(until, hold);
    ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
    ::close(fd);
    add_us(next, period);
  }
  ::close(persist);
  std::printf("opens %ld\n", opens);
  return 0;
}
