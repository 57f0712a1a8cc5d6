// Fuzzes the /proc/PID/task/TID/syscall parser: an accepted line is one of the
// three kinds, a refusal points inside the input; describing an accepted line
// (names, fd arguments, ioctl and futex decoding) never fails.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/memtools/ioctl_names.h"
#include "extmem/memtools/syscall.h"
#include "extmem/memtools/threads.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  extmem::memtools::SyntaxError bad;
  auto s = extmem::memtools::parse_syscall_line(text, &bad);
  if (!s) {
    if (bad.column > text.size() || bad.accepted.empty()) __builtin_trap();
    return 0;
  }
  using Kind = extmem::memtools::SyscallSample::Kind;
  if (s->kind == Kind::in_syscall && s->nr < 0) __builtin_trap();
  const std::string line = extmem::memtools::describe_syscall(*s, extmem::memtools::IoctlTable::builtin(),
                                                              [](long fd) { return fd == 3 ? std::string("/dev/dri/card0") : ""; });
  if (line.empty()) __builtin_trap();
  return 0;
}
