// Private to memtools: reads of a file mapping that survive the file
// shrinking under them (another process truncating it), reported as an error
// instead of the SIGBUS the kernel sends for a page past the new end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "extmem/core/error.h"

namespace extmem::memtools::detail {

/// Guards one read-only file mapping [addr, addr + size) while it lives.
///
/// A read of a page of the mapping that lies past the file's (new) end raises
/// SIGBUS on the reading thread. The guard's handler (installed once per
/// process, for every guard) then maps anonymous zero pages over the mapping
/// from the faulting page to its end, marks this guard as faulted, and returns:
/// the read is repeated and sees zeros, so every thread reading the mapping
/// carries on without a signal death and without a jump through C++ frames
/// (no destructor or lock is skipped). A reader must therefore treat whatever
/// it read as void once faulted() is true, and report shrank_error(). A SIGBUS
/// at an address outside every guard goes to the handler that was installed
/// before (ASan's, say), or kills the process as it would have.
///
/// The guard does not own the mapping nor the descriptor; it must be
/// destroyed before the mapping is unmapped. At most 64 guards at once;
/// beyond that a guard guards nothing (faulted() stays false, and a shrink
/// kills the process with SIGBUS as before). Not copyable or movable.
class MappingGuard {
 public:
  /// Guards nothing (faulted() is false).
  MappingGuard() = default;
  /// `addr`, `size` (bytes): the mapping; `fd`: the descriptor it maps (kept
  /// for shrank_error's fstat, not closed); `path`: its name in messages.
  /// Test hook: with EXTMEM_TEST_STOP_AFTER_MAP set in the environment the
  /// process stops itself (SIGSTOP) once the guard is in place, so a test can
  /// truncate the file before anything is read and then continue it.
  MappingGuard(const void* addr, std::size_t size, int fd, std::string path);
  ~MappingGuard();
  MappingGuard(const MappingGuard&) = delete;
  MappingGuard& operator=(const MappingGuard&) = delete;

  /// Whether a read of the mapping faulted (the file shrank) since the guard
  /// was made. Once true, stays true.
  bool faulted() const noexcept;
  /// Whether the file is now shorter than the mapping: faulted(), or fstat
  /// finds fewer bytes (a shrink within the last page faults no read, but
  /// the bytes after the new end read as zeros). The check to make once the
  /// reads are done; false for a guard that guards nothing.
  bool shrank() const noexcept;
  /// The error for a faulted mapping: code kCodePastEnd (exit 7), "PATH shrank
  /// while it was read: N bytes now, was M".
  Error shrank_error() const;
  /// OK when not shrank(), else shrank_error().
  Status check() const;

 private:
  int slot_ = -1;  // index in the process-wide table, -1: guards nothing
  int fd_ = -1;
  std::size_t size_ = 0;
  std::string path_;
};

/// "PATH shrank while it was read: N bytes now, was WAS" (code kCodePastEnd),
/// N from fstat(fd) ("gone" when fstat fails); `was` in bytes. For the readers
/// that find the end of file early through read/pread.
Error file_shrank(const std::string& path, int fd, std::uint64_t was);

/// Test hook shared by the file readers: SIGSTOP to the own process when
/// EXTMEM_TEST_STOP_AFTER_MAP is set (see MappingGuard).
void test_stop_after_map();

}  // namespace extmem::memtools::detail
