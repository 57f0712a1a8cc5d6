/* A C program built only from an installed extmem: headers and libextmem
 * through `pkg-config --cflags --libs extmem` (tests/package/consumers.sh).
 * Two shared mappings of one memfd alias each other; a private copy does not.
 * Exit 0 when both answers are right, 1 otherwise (the reason on stderr). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <extmem/core/zerocopy_c.h>

int main(void) {
  const size_t size = 4 * 4096;
  int fd = memfd_create("extmem-c-consumer", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
    perror("c_consumer: memfd");
    return 1;
  }
  unsigned char* a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  unsigned char* b = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  static unsigned char copy[4 * 4096];
  if (a == MAP_FAILED || b == MAP_FAILED) {
    perror("c_consumer: mmap");
    return 1;
  }
  memset(a, 0x5a, size);
  memcpy(copy, a, size);

  extmem_zc_result r;
  if (extmem_zc_check(a, size, b, size, NULL, &r) != EXTMEM_ZC_PASS) {
    fprintf(stderr, "c_consumer: two maps of one memfd: %s (%s)\n", extmem_zc_status_name(r.status), r.message);
    return 1;
  }
  const size_t aliased_offsets = r.offsets_probed;
  if (extmem_zc_check(a, size, copy, size, NULL, &r) != EXTMEM_ZC_NOT_OBSERVED) {
    fprintf(stderr, "c_consumer: a private copy: %s, expected not_observed\n", extmem_zc_status_name(r.status));
    return 1;
  }
  printf("c_consumer: alias pass (%zu offsets), copy %s\n", aliased_offsets, extmem_zc_status_name(r.status));
  munmap(a, size);
  munmap(b, size);
  close(fd);
  return 0;
}
