// One 1/2/4/8-byte word of a live process (through /proc/PID/mem: pread and
// pwrite, no ptrace, so nothing is left stopped if the tool dies) or of a file,
// with the checks `poke` and `poll` make before writing, and the audit log.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/map_spec.h"
#include "extmem/os/fd.h"
#include "extmem/os/proc_maps.h"

namespace extmem::memtools {

/// Our own refusals and checks (there is no OS code for these): an error's
/// native number in CodeSpace::extmem, what exit codes are chosen by; the
/// kCode* names below are its Error::code. Every refusal happens before
/// anything is written.
enum class WordCode : std::int64_t {
  not_mapped = 1,   ///< kCodeNotMapped
  crosses_mapping,  ///< kCodeCrossesMapping
  spec_mismatch,    ///< kCodeSpecMismatch
  not_writable,     ///< kCodeNotWritable
  expect_mismatch,  ///< kCodeExpectMismatch
  past_end,         ///< kCodePastEnd
};

inline constexpr const char* kCodeNotMapped = "NOT_MAPPED";            ///< address outside every mapping
inline constexpr const char* kCodeCrossesMapping = "CROSSES_MAPPING";  ///< the word runs past the mapping's end
inline constexpr const char* kCodeSpecMismatch = "SPEC_MISMATCH";      ///< the mapping does not match --match
inline constexpr const char* kCodeNotWritable = "NOT_WRITABLE";        ///< the mapping lacks 'w' (poke refuses it)
inline constexpr const char* kCodeExpectMismatch = "EXPECT_MISMATCH";  ///< old value differs from --expect
inline constexpr const char* kCodePastEnd = "PAST_END";                ///< file mode: the word runs past end of file

/// The kCode* name of `code`.
const char* to_string(WordCode code) noexcept;

/// An error with our own code: code to_string(`code`), native `code`.
Error word_error(std::string step, ErrorKind kind, WordCode code, std::string detail);

/// The WordCode an error carries, or nullopt (an OS or driver error, or none).
std::optional<WordCode> word_code(const Error& error) noexcept;

/// A place words are read from and written to: the memory of a process
/// (/proc/PID/mem) or a file (regular or block device). Owns its fd; move-only. Words are in
/// this machine's byte order (little-endian on x86-64 and arm64).
class WordTarget {
 public:
  /// Opens /proc/PID/mem, read-only or read-write. Needs the same permission
  /// as a debugger attaching (same user, no extra capabilities in the target,
  /// or CAP_SYS_PTRACE) but never stops or traces the process.
  /// Errors: os_error("open /proc/PID/mem") — ENOENT: no such process; EACCES/EPERM: not allowed.
  static Result<WordTarget> open_process(pid_t pid, bool writable);

  /// Opens a regular file or block device, read-only or read-write (never
  /// created or extended); its size is taken now. Errors: os_error("open
  /// FILE"|"fstat FILE"), invalid_argument for other kinds of file.
  static Result<WordTarget> open_file(const std::string& path, bool writable);

  /// Reads the `width`-byte word at `address` (process: virtual address;
  /// file: byte offset). Errors: os_error("pread ...") (EIO: the address is not
  /// backed; ESRCH: the process ended); file: kCodePastEnd when the word runs
  /// past the end of the file.
  Result<std::uint64_t> read(std::uint64_t address, unsigned width) const;

  /// Writes the low `width` bytes of `value` at `address` in one pwrite. No
  /// check of mappings or values here (see write_checked()). Errors as read(),
  /// plus EBADF when opened read-only.
  Status write(std::uint64_t address, unsigned width, std::uint64_t value) const;

  pid_t pid() const noexcept { return pid_; }               ///< 0 in file mode
  const std::string& name() const noexcept { return name_; }  ///< "/proc/PID/mem" or the file path
  std::uint64_t file_size() const noexcept { return size_; }  ///< file mode: bytes at open; 0 for a process

 private:
  os::UniqueFd fd_;
  pid_t pid_ = 0;
  std::string name_;
  std::uint64_t size_ = 0;
};

/// One word written, as the audit log records it.
struct WriteRecord {
  pid_t pid = 0;                        ///< process written to; 0 in file mode
  std::string comm;                     ///< its /proc/PID/comm at the time ("" in file mode or when gone)
  std::string file;                     ///< file mode: the file's path
  std::uint64_t address = 0;            ///< virtual address, or byte offset in file mode
  std::optional<std::uint64_t> gpa;     ///< file mode with a ram-map: the guest-physical address written
  unsigned width = 4;                   ///< bytes
  std::uint64_t old_value = 0;          ///< read just before writing
  std::uint64_t written = 0;            ///< value written
  /// Read just after writing; nullopt when the process ended right after the
  /// write (a released waiter often does), so there was nothing to read back.
  std::optional<std::uint64_t> read_back;
  std::optional<os::MapEntry> mapping;  ///< process mode: the mapping holding the word

  /// True when a read-back was made and differs from the value written.
  bool read_back_differs() const noexcept { return read_back && *read_back != written; }
};

/// The mapping in `maps` holding all `width` bytes at `address`, checked for a
/// write or read: it must match `spec` when one is given, and for a write it
/// must be writable. Errors (invalid_argument, step `step`, nothing touched):
/// kCodeNotMapped, kCodeCrossesMapping, kCodeSpecMismatch, kCodeNotWritable.
Result<os::MapEntry> find_target_mapping(const std::vector<os::MapEntry>& maps, std::uint64_t address,
                                         unsigned width, const MapSpec* spec, bool for_write,
                                         const std::string& step);

/// Compare-then-write of one word through an open target: reads the old value,
/// refuses (kCodeExpectMismatch, kind mismatch, nothing written) when `expect`
/// is given and differs, writes `value`, reads it back (a process that ended
/// right after the write is not an error: the record has no read-back). The read and the write
/// are separate system calls: another writer can slip in between; --expect
/// narrows that window, it cannot close it. The record's pid/file/mapping/comm
/// are filled from `target` and `mapping`. Errors: those of WordTarget.
Result<WriteRecord> write_checked(const WordTarget& target, const os::MapEntry* mapping, std::uint64_t address,
                                  unsigned width, std::uint64_t value, std::optional<std::uint64_t> expect);

/// What a word read found.
struct PeekResult {
  std::uint64_t value = 0;
  std::optional<os::MapEntry> mapping;  ///< process mode: the mapping holding it
};

/// Reads one word of process `pid` after checking it lies in one mapping
/// (matching `spec` when given). Errors: those of read_maps,
/// find_target_mapping and WordTarget (a vanished process is ENOENT/ESRCH).
Result<PeekResult> peek_process(pid_t pid, std::uint64_t address, unsigned width, const MapSpec* spec);

/// Reads one word of a file at byte `offset`. Errors: those of WordTarget.
Result<PeekResult> peek_file(const std::string& path, std::uint64_t offset, unsigned width);

/// What to write with poke_process() / poke_file().
struct PokeRequest {
  std::uint64_t address = 0;            ///< virtual address, or byte offset in file mode
  unsigned width = 4;                   ///< 1, 2, 4 or 8 bytes
  std::uint64_t value = 0;              ///< must fit in `width`
  std::optional<std::uint64_t> expect;  ///< write only when the old value equals this
  const MapSpec* match = nullptr;       ///< process mode: the mapping must match (borrowed; may be null)
};

/// Writes one word of process `pid`: the address must lie in one writable
/// mapping (matching `match`), then write_checked(). On any error nothing was
/// written. Errors: those of read_maps, find_target_mapping, write_checked.
Result<WriteRecord> poke_process(pid_t pid, const PokeRequest& request);

/// Writes one word of a file at byte offset `request.address` (never extends
/// the file: kCodePastEnd). Errors: those of WordTarget and write_checked.
Result<WriteRecord> poke_file(const std::string& path, const PokeRequest& request);

/// One mapping as one line: "START-END PERMS OFFSET PATH", hex as in /proc/PID/maps.
std::string format_mapping(const os::MapEntry& mapping);

/// The audit line of `record` (no trailing newline), e.g.
/// "2026-11-29T10:00:00.123456Z write pid=42 comm=waiter addr=0x7f0000000080 width=4 old=0x0 new=0x1
///  readback=0x1 mapping=7f0000000000-7f0000004000 rw-s 00000000 /memfd:x (deleted)"
/// (one line; "readback=ended" when the process ended right after the write). File mode has "file=PATH offset=0x..." (and "gpa=0x..." with a ram-map) instead of pid/comm/addr/mapping.
std::string format_audit_line(const WriteRecord& record, std::chrono::system_clock::time_point when);

/// Where audit lines go: a file opened for appending (created 0644) or stderr.
/// Each line is one write(2), so lines of concurrent writers do not interleave.
/// Move-only.
class AuditLog {
 public:
  /// `path` empty: standard error (borrowed, not closed). Errors: os_error("open PATH").
  static Result<AuditLog> open(const std::string& path);
  /// Appends the line of `record`, stamped now. Errors: os_error("write audit log").
  Status record(const WriteRecord& record) const;

 private:
  os::UniqueFd owned_;
  int fd_ = 2;
};

}  // namespace extmem::memtools
