// Benchmark helper for `extmem watch`: holds about N mappings (default
// 40000) and sleeps. One anonymous read-write region is made and every other
// page of it is made read-only, so each (read-write page, read-only page) pair
// is two separate areas in /proc/self/maps. Prints "ready MAPPINGS" (the line
// count of /proc/self/maps) once set up, then sleeps until killed or for --seconds.
//
//   watch_maps_holder [--mappings=40000] [--seconds=3600]
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  long want = 40000, seconds = 3600;
  for (int i = 1; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--mappings=", 11)) want = std::strtol(argv[i] + 11, nullptr, 10);
    else if (!std::strncmp(argv[i], "--seconds=", 10)) seconds = std::strtol(argv[i] + 10, nullptr, 10);
    else {
      std::fprintf(stderr, "watch_maps_holder: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  const long page = sysconf(_SC_PAGESIZE);
  const long pairs = want / 2;  // each read-only page splits off one more area (plus its read-write neighbour)
  char* base = static_cast<char*>(
      mmap(nullptr, static_cast<size_t>(2 * pairs + 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (base == MAP_FAILED) {
    std::perror("watch_maps_holder: mmap");
    return 3;
  }
  for (long i = 0; i < pairs; ++i) {
    base[(2 * i) * page] = 1;  // resident, so page walks (smaps) have work to do like in a real process
    if (mprotect(base + (2 * i + 1) * page, static_cast<size_t>(page), PROT_READ) != 0) {
      std::perror("watch_maps_holder: mprotect (vm.max_map_count?)");
      return 3;
    }
  }
  long lines = 0;
  if (FILE* f = std::fopen("/proc/self/maps", "r")) {
    for (int c; (c = std::fgetc(f)) != EOF;)
      if (c == '\n') ++lines;
    std::fclose(f);
  }
  std::printf("ready %ld\n", lines);
  std::fflush(stdout);
  sleep(static_cast<unsigned>(seconds));
  return 0;
}
