// Where a thread sits in the kernel, as /proc/PID/task/TID/syscall says, and the
// names of system calls. Reading that file needs the access a debugger would
// (PTRACE_MODE_ATTACH), but nothing is attached: the thread is not stopped.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// One reading of /proc/PID/task/TID/syscall.
struct SyscallSample {
  enum class Kind {
    running,         ///< "running": the thread was runnable (on a CPU or waiting for one)
    outside_syscall, ///< "-1 SP PC": blocked in the kernel but not in a system call (a page fault, a stop)
    in_syscall,      ///< "NR A1..A6 SP PC": blocked inside system call NR with these arguments
  };
  Kind kind = Kind::running;
  long nr = -1;                          ///< system-call number (in_syscall only)
  std::array<std::uint64_t, 6> args{};   ///< its six argument registers, raw (in_syscall only)
  std::uint64_t sp = 0;                  ///< user stack pointer (not for running)
  std::uint64_t pc = 0;                  ///< user program counter (not for running)

  friend bool operator==(const SyscallSample&, const SyscallSample&) = default;
};

/// Parses the text of /proc/PID/task/TID/syscall (a trailing newline is
/// allowed). Numbers are hexadecimal with or without 0x (the kernel prints 0 as
/// "0"), the system-call number decimal. Errors: invalid_argument, step
/// "parse syscall line"; `syntax`, when not null, points at the bad character.
Result<SyscallSample> parse_syscall_line(std::string_view text, SyntaxError* syntax = nullptr);

/// The name of system call `nr` on the architecture this was built for
/// ("ioctl" for 16 on x86-64), from the C library's <sys/syscall.h>; empty when unknown.
std::string_view syscall_name(long nr);

/// The number of system call `name`, or -1 when unknown (for tests and tables).
long syscall_number(std::string_view name);

/// Which of the six arguments of system call `name` are file descriptors:
/// bit i set for argument i (read: bit 0; mmap: bit 4; epoll_ctl: bits 0 and 2).
/// 0 for calls without fd arguments and for unknown names.
unsigned syscall_fd_arguments(std::string_view name);

}  // namespace extmem::memtools
