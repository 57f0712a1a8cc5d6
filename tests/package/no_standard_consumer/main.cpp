// Built with no C++ standard named by its project: the zerocopy check of a
// buffer against itself (aliased) and against a copy. Exit 0 when both are right.
#include <cstddef>
#include <cstdio>
#include <vector>

#include <extmem/core/zerocopy.h>

int main() {
  std::vector<std::byte> a(4 * 4096, std::byte{0x5a}), copy = a;
  const bool alias = extmem::zerocopy::passed(extmem::zerocopy::check(a, a));
  const bool copied = extmem::zerocopy::passed(extmem::zerocopy::check(a, copy));
  std::printf("no_standard_consumer: C++ %ld, alias %s, copy %s\n", static_cast<long>(__cplusplus),
              alias ? "passed" : "refused", copied ? "passed" : "refused");
  return alias && !copied ? 0 : 1;
}
